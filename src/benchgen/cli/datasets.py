"""`benchgen datasets upload`, `list` and `delete`: a user's training data, from files on this
machine."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from benchgen.cli.common import (
    As,
    as_user,
    console,
    errors,
    open_runtime,
    print_table,
    read_within,
    wrapping_table,
)
from benchgen.cli.doors import reported
from benchgen.cli.helptext import App
from benchgen.core.text import plural
from benchgen.services.datasets import datasets

app = App(help="Datasets: training data for fine-tuning.", no_args_is_help=True)
MAP_KEYS = ("messages", "prompt", "completion")


class DatasetFormat(StrEnum):
    """How an uploaded dataset is read."""

    AUTO = "auto"
    CHAT = "chat"
    PROMPT_COMPLETION = "prompt_completion"
    CSV = "csv"
    PARQUET = "parquet"


DataFile = Annotated[
    Path,
    typer.Argument(
        exists=True,
        dir_okay=False,
        readable=True,
        metavar="FILE",
        help="Chat or prompt/completion JSONL, a CSV, or a Parquet file.",
    ),
]


@app.command("upload")
def upload(
    data_file: DataFile,
    as_email: As,
    name: Annotated[
        str | None, typer.Option(metavar="NAME", help="Its name (default: the file's name).")
    ] = None,
    format: Annotated[
        DatasetFormat,
        typer.Option(
            "--format",
            help="auto: by the name and first bytes, then the first row's fields; chat or "
            "prompt_completion: JSON lines; csv; parquet.",
        ),
    ] = DatasetFormat.AUTO,
    maps: Annotated[
        list[str] | None,
        typer.Option(
            "--map",
            metavar="PART=FIELD",
            help="Which field holds a part (messages, prompt, completion), e.g. "
            "--map prompt=question.",
        ),
    ] = None,
) -> None:
    """Upload a dataset as a user. Nothing is stored unless every row is valid: otherwise each
    problem is printed with its line (JSONL, CSV) or row (Parquet) and the exit status is 1.
    The token count is an estimate (characters / 4).

    \b
    Examples:
      $ benchgen datasets upload support.jsonl --name 'Support replies' --as ana@example.com
      $ benchgen datasets upload faq.csv --map prompt=q --map completion=a --as ana@example.com
    """
    spec = {"name": name or data_file.stem, "format": format.value, "mapping": _mapping(maps)}
    with open_runtime() as runtime:
        limit = runtime.settings.max_dataset_bytes
        data = read_within(data_file, limit, "BENCHGEN_MAX_DATASET_BYTES")
        with reported(), as_user(runtime, as_email) as ctx:
            made = datasets.upload_dataset(ctx, data, data_file.name, spec)
    console.print(
        Text.assemble(
            "Uploaded dataset ",
            (made.id, "bold"),
            f": {made.name} ({made.format}, {plural(made.row_count, 'row')}, "
            f"about {made.token_estimate} tokens)",
        )
    )


def _mapping(given: list[str] | None) -> dict[str, str]:
    """`--map PART=FIELD` options as the upload's mapping."""
    mapping: dict[str, str] = {}
    for item in given or []:
        part, sep, field = (piece.strip() for piece in item.partition("="))
        if not sep or part not in MAP_KEYS or not field:
            message = f"Error: --map {item!r}: give PART=FIELD, PART one of {', '.join(MAP_KEYS)}."
            errors.print(Text(message, style="red"))
            raise typer.Exit(2)
        mapping[part] = field
    return mapping


@app.command("list")
def list_datasets(as_email: As) -> None:
    """The user's datasets, newest first (the 200 newest).

    \b
    Examples:
      $ benchgen datasets list --as ana@example.com
    """
    with open_runtime() as runtime, as_user(runtime, as_email) as ctx:
        rows = datasets.list_datasets(ctx, 200)
    table = wrapping_table("name", "format", "rows", "tokens (≈)")
    table.add_column("id", no_wrap=True, min_width=23)
    for row in rows:
        table.add_row(row.name, row.format, str(row.row_count), str(row.token_estimate), row.id)
    print_table(table, "No datasets yet: `benchgen datasets upload FILE` adds one.")


@app.command("delete")
def delete(
    dataset_id: Annotated[str, typer.Argument(help="The dataset's id (ds_…).")],
    as_email: As,
    yes: Annotated[bool, typer.Option("--yes", help="Do not ask to confirm.")] = False,
) -> None:
    """Delete one of the user's datasets and its stored file (training jobs that used it keep
    their record).

    \b
    Examples:
      $ benchgen datasets delete ds_… --yes --as ana@example.com
    """
    with open_runtime() as runtime, as_user(runtime, as_email) as ctx:
        shown = datasets.get_dataset(ctx, dataset_id)
    if not yes:
        typer.confirm(
            f"Delete the dataset {shown.name!r} ({plural(shown.row_count, 'row')})?", abort=True
        )
    with open_runtime() as runtime, as_user(runtime, as_email) as ctx:
        datasets.delete_dataset(ctx, dataset_id)
    console.print(f"Deleted dataset {dataset_id}.")


commands = App()
commands.add_typer(app, name="datasets")
