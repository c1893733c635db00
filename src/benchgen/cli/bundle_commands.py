"""`benchgen benchmarks upload`, `download-bundle`, `submit`: benchmarks from Codabench bundles."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from benchgen.cli.common import (
    AsHere,
    Token,
    Url,
    cell,
    console,
    save_download,
    wrapping_table,
)
from benchgen.cli.doors import Kind, Plain, door, place

ZipFile = Annotated[
    Path,
    typer.Argument(
        exists=True, dir_okay=False, readable=True, metavar="FILE", help="The .zip file to send."
    ),
]


def upload(
    bundle: ZipFile,
    as_email: AsHere = None,
    url: Url = None,
    token: Token = None,
    to: Annotated[
        str | None,
        typer.Option(
            metavar="BENCHMARK_ID",
            help="Upload it as the next version of this custom benchmark instead (its runs "
            "keep their version; adding or removing phases or tasks is done in the web app).",
        ),
    ] = None,
) -> None:
    """Create a custom benchmark from a Codabench v2 bundle (a .zip with competition.yaml at
    its root), or upload a new version of one with --to.

    The bundle is checked whole and its solutions are scored in the sandbox before anything is
    kept: the command prints the benchmark's id, warnings (keys it ignores) and each solution's
    scores. When the bundle is invalid it prints every problem with its place in
    competition.yaml and its line, and exits with status 1. A new benchmark stays private
    until published, which a failing solution prevents.

    \b
    Examples:
      $ benchgen benchmarks upload competition.zip --as ana@example.com
      $ benchgen benchmarks upload changed.zip --to bm_… --url https://bench.example
    """
    with door(as_email, url, token) as where:
        if to is None:
            created, view = where.upload(bundle)
            made = created["benchmark"]
            console.print(
                Text.assemble(
                    "Created custom benchmark ", (made["id"], "bold"), f": {made['title']}"
                )
            )
        else:
            view = where.upload_version(to, bundle)
        console.print(f"Bundle version {view['version']} ({view['size']} bytes).")
    _show_bundle(view)


def _show_bundle(view: Plain) -> None:
    for warning in view.get("warnings") or []:
        console.print(Text(f"Warning: {place(warning)}: {warning.get('msg', '')}", style="yellow"))
    solutions = view.get("solutions") or []
    if not solutions:
        console.print("The bundle has no solutions to check it with.")
        return
    table = wrapping_table("solution", "result", "scores", title="Solutions")
    for solution in solutions:
        result = Text("ok", "green") if solution.get("ok") else Text("failed", "red")
        scores = ", ".join(
            f"{key} {value:g}" if isinstance(value, float | int) else f"{key} {value}"
            for key, value in (solution.get("scores") or {}).items()
        )
        named = f"{cell(solution, 'index')} {cell(solution, 'name')}".strip()
        table.add_row(named, result, scores or cell(solution, "error"))
    console.print(table)
    for solution in solutions:
        if solution.get("output"):
            # Text, not markup: the programs' output is the bundle author's, printed as it is.
            console.print(Text(f"Output of solution {solution['index']}:", style="bold"))
            console.print(Text(solution["output"]))
    if not all(solution["ok"] for solution in solutions):
        console.print(Text("A failing solution keeps the benchmark from being published.", "red"))


def download_bundle(
    benchmark_id: Annotated[str, typer.Argument(metavar="ID", help="Custom benchmark id (bm_…).")],
    as_email: AsHere = None,
    url: Url = None,
    token: Token = None,
    version: Annotated[
        int | None, typer.Option(min=1, metavar="N", help="Which version (default: newest).")
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            metavar="FILE",
            help="Where to write it (default: ID-vN.zip here; - for standard output).",
        ),
    ] = None,
    force: Annotated[bool, typer.Option(help="Overwrite FILE if it exists.")] = False,
) -> None:
    """Save a custom benchmark's bundle exactly as it was uploaded (its owner and collaborators
    only: it holds the reference data and the solutions).

    \b
    Examples:
      $ benchgen benchmarks download-bundle bm_… --version 1 -o bundle.zip --as ana@example.com
    """
    with door(as_email, url, token) as where:
        name, data = where.download(benchmark_id, version)
    save_download(output or Path(name), data, force)


def submit(
    benchmark_id: Annotated[str, typer.Argument(metavar="ID", help="Custom benchmark id (bm_…).")],
    submission: ZipFile,
    as_email: AsHere = None,
    url: Url = None,
    token: Token = None,
    phase: Annotated[
        int | None,
        typer.Option(
            min=0,
            metavar="N",
            help="The phase's number: 0 for the first in the bundle's order, 1 for the next "
            "(default: the open one).",
        ),
    ] = None,
    kind: Annotated[
        Kind,
        typer.Option(
            help="results (predictions for the scoring program), code (for the ingestion "
            "program), or auto: code when the phase has an ingestion program and the zip holds "
            "Python files."
        ),
    ] = Kind.AUTO,
    wait: Annotated[
        bool, typer.Option(help="Follow the run until it ends and print its scores.")
    ] = False,
) -> None:
    """Submit a results zip or a code zip to a custom benchmark, as Codabench participants
    do; it becomes a run, scored in the sandbox by the bundle's programs.

    With --wait the command follows the run (here, it works on it in this process) and prints
    its scores; it exits with status 1 when the run did not complete.

    \b
    Examples:
      $ benchgen benchmarks submit bm_… predictions.zip --phase 0 --wait --as ana@example.com
      $ benchgen benchmarks submit bm_… code.zip --kind code --url https://bench.example
    """
    with door(as_email, url, token) as where:
        run = where.submit(benchmark_id, submission, phase, kind.value)
        console.print(Text.assemble("Submission queued as run ", (run["id"], "bold"), "."))
        if wait:
            run = where.follow(run)
    if wait:
        _show_run(run)


def _show_run(run: Plain) -> None:
    style = "green" if run["status"] == "completed" else "red"
    console.print(Text.assemble((run["status"], style), f": run {run['id']}"))
    if run["scores"]:
        table = wrapping_table("score", "value")
        for key, value in run["scores"].items():
            table.add_row(key, f"{value:g}" if isinstance(value, float | int) else str(value))
        console.print(table)
    if run["status"] != "completed":
        console.print(Text(run["error"] or "No scores.", style="red"))
        raise typer.Exit(1)
