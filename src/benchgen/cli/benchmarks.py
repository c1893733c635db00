"""`benchgen benchmarks …`: the benchmarks a user may see, and the app that gathers the file and
Codabench bundle commands."""

from __future__ import annotations

from typing import Annotated

import typer

from benchgen.cli import benchmark_files, bundle_commands
from benchgen.cli.common import AsHere, Token, Url, cell, print_table, wrapping_table
from benchgen.cli.doors import WHERE, door
from benchgen.cli.helptext import App

app = App(
    help="Benchmarks: list those you may see (and their ids), import questions from JSONL, CSV, "
    "Parquet or Hugging Face dataset files, export them for Inspect AI or lm-evaluation-harness; "
    "custom benchmarks made from Codabench v2 bundles: upload, new versions, download, submit."
    + WHERE,
    no_args_is_help=True,
)


@app.command("list")
def list_benchmarks(
    as_email: AsHere = None,
    url: Url = None,
    token: Token = None,
    mine: Annotated[bool, typer.Option("--mine", help="Only the benchmarks you own.")] = False,
    search: Annotated[
        str, typer.Option(metavar="WORDS", help="Only those whose title holds these words.")
    ] = "",
) -> None:
    """The benchmarks you may see, newest first: yours, those shared with you and published
    ones, with the id (bm_…) that other commands take.

    \b
    Examples:
      $ benchgen benchmarks list --mine --as ana@example.com
      $ benchgen benchmarks list --search capitals --url https://bench.example
    """
    with door(as_email, url, token) as where:
        rows = where.list_benchmarks(mine, search)
    # Only the title wraps: in a narrow terminal the short columns were cut mid-word.
    table = wrapping_table("title")
    for header in ("format", "questions", "visibility"):
        table.add_column(header, no_wrap=True)
    table.add_column("id", no_wrap=True, min_width=23)
    for row in rows:
        # A custom benchmark has tasks scored by its bundle's program, not questions.
        count = "—" if row.get("format") == "custom" else cell(row, "question_count")
        shown = (cell(row, "format"), count, cell(row, "visibility"), cell(row, "id"))
        table.add_row(cell(row, "title"), *shown)
    made = "`benchgen benchmarks import FILE` or `benchgen benchmarks upload FILE` makes one"
    print_table(table, "No benchmark matches." if mine or search else f"No benchmarks yet: {made}.")


app.command("import")(benchmark_files.import_file)
app.command("export")(benchmark_files.export)
app.command("upload")(bundle_commands.upload)
app.command("download-bundle")(bundle_commands.download_bundle)
app.command("submit")(bundle_commands.submit)


commands = App()
commands.add_typer(app, name="benchmarks")
