"""`benchgen benchmarks import` and `export`: benchmarks' questions from and to files."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from benchgen.cli.common import AsHere, Token, Url, console, errors, save_download
from benchgen.cli.doors import ExportFormat, Plain, door, place
from benchgen.core.text import plural


class QuestionFormat(StrEnum):
    """A benchmark's kind of questions."""

    QA = "qa"
    MCQ = "mcq"


class FileFormat(StrEnum):
    """How an imported file is read."""

    AUTO = "auto"
    JSONL = "jsonl"
    CSV = "csv"
    PARQUET = "parquet"
    HF = "hf"


class Preset(StrEnum):
    """Whose field names an imported file uses."""

    NONE = "none"
    INSPECT = "inspect"
    LM_EVAL_MCQ = "lm_eval_mcq"


QuestionsFile = Annotated[
    Path,
    typer.Argument(
        exists=True,
        dir_okay=False,
        readable=True,
        metavar="FILE",
        help="A .jsonl, .json (one array), .csv, .parquet or Hugging Face datasets (.arrow) file.",
    ),
]
MAP_KEYS = ("prompt", "answer", "choices", "answer_is", "tags", "id", "metadata")


def import_file(
    questions: QuestionsFile,
    as_email: AsHere = None,
    url: Url = None,
    token: Token = None,
    title: Annotated[
        str | None, typer.Option(metavar="TITLE", help="The title (default: the file's name).")
    ] = None,
    description: Annotated[str, typer.Option(metavar="TEXT", help="A description.")] = "",
    format: Annotated[
        QuestionFormat | None,
        typer.Option("--format", help="qa or mcq (default: mcq when any row has choices)."),
    ] = None,
    file_format: Annotated[
        FileFormat,
        typer.Option(
            help="auto: by the name, then the first bytes; hf: a Hugging Face datasets file "
            "(Arrow, Parquet or JSON lines)."
        ),
    ] = FileFormat.AUTO,
    preset: Annotated[
        Preset,
        typer.Option(
            help="inspect: Inspect AI's input/target/choices/id; lm_eval_mcq: MMLU, ARC, "
            "query/choices/gold or HellaSwag layouts."
        ),
    ] = Preset.NONE,
    maps: Annotated[
        list[str] | None,
        typer.Option(
            "--map",
            metavar="PART=FIELD",
            help="Which field holds a part (prompt, answer, choices, answer_is, tags, id, "
            "metadata), e.g. --map prompt=question; give choices=… once per column for "
            "several; answer_is is index, letter, text or auto. Overrides the preset.",
        ),
    ] = None,
) -> None:
    """Create a benchmark from a file of questions, reading each field through a preset and
    a field mapping. Files are read here and sent whole: nothing is downloaded.

    Nothing is created unless every row is valid: otherwise the command prints each problem
    with its line (JSONL, CSV) or row (Parquet, Arrow) and exits with status 1. On success it
    prints the new benchmark's id and any warnings; the benchmark stays private until
    published.

    \b
    Examples:
      $ benchgen benchmarks import questions.jsonl --as ana@example.com
      $ benchgen benchmarks import mmlu.parquet --preset lm_eval_mcq --title 'MMLU sample' --url https://bench.example
      $ benchgen benchmarks import quiz.csv --map prompt=q --map answer=key --as ana@example.com
    """
    spec: Plain = {
        "title": title or questions.stem,
        "description": description,
        "format": format.value if format else None,
        "file_format": file_format.value,
        "preset": preset.value,
        "mapping": _mapping(maps or []),
    }
    with door(as_email, url, token) as where:
        created = where.import_file(questions, spec)
    made = created["benchmark"]
    console.print(
        Text.assemble(
            "Created benchmark ",
            (made["id"], "bold"),
            f": {made['title']} ({made['format']}, {plural(made['question_count'], 'question')})",
        )
    )
    for warning in created.get("warnings") or []:
        console.print(Text(f"Warning: {place(warning)}: {warning.get('msg', '')}", style="yellow"))


def _mapping(given: list[str]) -> Plain:
    """`--map PART=FIELD` options as the import's mapping; several `choices` make a list."""
    mapping: Plain = {}
    for item in given:
        part, sep, field = item.partition("=")
        part, field = part.strip(), field.strip()
        if not sep or part not in MAP_KEYS or not field:
            errors.print(
                Text(
                    f"Error: --map {item!r}: give PART=FIELD, PART one of {', '.join(MAP_KEYS)}.",
                    style="red",
                )
            )
            raise typer.Exit(2)
        if part == "choices":
            mapping.setdefault("choices", []).append(field)
        else:
            mapping[part] = field
    return mapping


def export(
    benchmark_id: Annotated[str, typer.Argument(metavar="ID", help="Benchmark id (bm_…).")],
    as_email: AsHere = None,
    url: Url = None,
    token: Token = None,
    format: Annotated[
        ExportFormat,
        typer.Option(
            "--format",
            help="jsonl (one question a line, as import reads it), inspect (an Inspect AI task "
            "folder, zipped) or lm_eval (an lm-evaluation-harness task folder, zipped).",
        ),
    ] = ExportFormat.JSONL,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            metavar="FILE",
            help="Where to write it (default: its name, here; - for standard output).",
        ),
    ] = None,
    force: Annotated[bool, typer.Option(help="Overwrite FILE if it exists.")] = False,
) -> None:
    """Save a qa or mcq benchmark with its answer key (its owner and collaborators only), to
    run it unchanged in Inspect AI or lm-evaluation-harness: the task folders read the
    questions from a dataset.jsonl, and their code holds none of the benchmark's text.

    \b
    Examples:
      $ benchgen benchmarks export bm_… --format inspect --as ana@example.com
      $ benchgen benchmarks export bm_… -o - --url https://bench.example | head
    """
    with door(as_email, url, token) as where:
        name, data = where.export(benchmark_id, format.value)
    save_download(output or Path(name), data, force)
