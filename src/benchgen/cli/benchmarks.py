"""`benchgen benchmarks …`: custom benchmarks from Codabench v2 bundles, here or on a server."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Protocol

import typer
from pydantic import TypeAdapter
from rich.table import Table
from rich.text import Text

from benchgen.cli.common import AsHere, Token, Url, cli_principal, console, errors, open_runtime
from benchgen.cli.evaluation import follow_run, progress_bar
from benchgen.core.errors import InvalidInput
from benchgen.services.benchmarks import bundles
from benchgen.services.runs import submissions
from benchgen.services.runtime import Runtime, transaction

# The HTTP client loads only for --url: commands run here never need it.
if TYPE_CHECKING:
    from benchgen.client import BenchGen

WHERE = (
    "\n\n[bold]Where:[/] --as EMAIL works on this machine's database (audited as the cli door); "
    "--url URL with --token (or BENCHGEN_TOKEN) works on a remote server through its API, with "
    "a personal token that has the scope the action needs. Give one or the other."
)
app = typer.Typer(
    help="Custom benchmarks made from Codabench v2 bundles: upload, new versions, download, "
    "submit." + WHERE,
    no_args_is_help=True,
    rich_markup_mode="rich",
)
# A submission's programs may run for many minutes a task; past this, --wait gives up (the run
# itself goes on, and `benchgen` can be asked about it later).
WAIT_S = 6 * 3600.0
Plain = dict[str, Any]


class Kind(StrEnum):
    """How a submission zip is read."""

    AUTO = "auto"
    RESULTS = "results"
    CODE = "code"


class Door(Protocol):
    """Where commands act: this machine's services, or a server's API (answers as the API's)."""

    def upload(self, data: bytes, filename: str) -> tuple[Plain, Plain]:
        """A new custom benchmark: (the created benchmark with warnings, its bundle)."""

    def upload_version(self, benchmark_id: str, data: bytes, filename: str) -> Plain:
        """The bundle after a new version."""

    def download(self, benchmark_id: str, version: int | None) -> tuple[str, bytes]:
        """A bundle version's file name and bytes."""

    def submit(
        self, benchmark_id: str, data: bytes, filename: str, phase: int | None, kind: str
    ) -> Plain:
        """The queued run of a submission."""

    def follow(self, run: Plain) -> Plain:
        """The run once it ended, showing progress meanwhile."""


class LocalDoor:
    """This machine's database, acting as a user through the cli door."""

    def __init__(self, runtime: Runtime, email: str) -> None:
        self.runtime, self.email = runtime, email
        self.principal = cli_principal(runtime, email)

    def upload(self, data: bytes, filename: str) -> tuple[Plain, Plain]:
        with transaction(self.runtime, self.principal) as ctx:
            created = bundles.upload_bundle(ctx, data, filename)
            view = bundles.get_bundle(ctx, created.benchmark.id)
        return {"benchmark": plain(created.benchmark), "warnings": created.warnings}, plain(view)

    def upload_version(self, benchmark_id: str, data: bytes, filename: str) -> Plain:
        with transaction(self.runtime, self.principal) as ctx:
            return plain(bundles.upload_bundle_version(ctx, benchmark_id, data, filename))

    def download(self, benchmark_id: str, version: int | None) -> tuple[str, bytes]:
        with transaction(self.runtime, self.principal, write=False) as ctx:
            found = bundles.download_bundle(ctx, benchmark_id, version)
        return found.filename, found.data

    def submit(
        self, benchmark_id: str, data: bytes, filename: str, phase: int | None, kind: str
    ) -> Plain:
        with transaction(self.runtime, self.principal) as ctx:
            return plain(submissions.submit(ctx, benchmark_id, data, filename, phase, kind))

    def follow(self, run: Plain) -> Plain:
        return plain(follow_run(self.runtime, self.email, run["id"], run["question_count"]))


class RemoteDoor:
    """A server's API, through the Python client and a personal token."""

    def __init__(self, client: BenchGen) -> None:
        self.client = client

    def upload(self, data: bytes, filename: str) -> tuple[Plain, Plain]:
        created = self.client.upload_bundle(data, filename)
        return dict(created), dict(self.client.get_bundle(created["benchmark"]["id"]))

    def upload_version(self, benchmark_id: str, data: bytes, filename: str) -> Plain:
        return dict(self.client.upload_bundle_version(benchmark_id, data, filename))

    def download(self, benchmark_id: str, version: int | None) -> tuple[str, bytes]:
        # Named as the server names it, which needs the version even when the newest is asked.
        number = version or self.client.get_bundle(benchmark_id)["version"]
        return f"{benchmark_id}-v{number}.zip", self.client.download_bundle(benchmark_id, number)

    def submit(
        self, benchmark_id: str, data: bytes, filename: str, phase: int | None, kind: str
    ) -> Plain:
        sent = self.client.submit(benchmark_id, data, phase, Kind(kind).value, filename)
        return dict(sent)

    def follow(self, run: Plain) -> Plain:
        with progress_bar() as progress:
            task = progress.add_task("Processing", total=run["question_count"])
            done = self.client.wait_for_run(
                run["id"],
                timeout_s=WAIT_S,
                on_progress=lambda now: progress.update(task, completed=now["done_count"]),
            )
        return dict(done)


def plain(value: Any) -> Plain:
    """A service's answer as the API sends it (JSON types), so both doors print alike."""
    dumped: Plain = TypeAdapter(type(value)).dump_python(value, mode="json")
    return dumped


@contextmanager
def door(as_email: str | None, url: str | None, token: str | None) -> Iterator[Door]:
    """The door the options name; every refusal ends the command with its message."""
    if (as_email is None) == (url is None):
        errors.print("[red]Error:[/] give either --as EMAIL (this machine) or --url URL (remote).")
        raise typer.Exit(2)
    if as_email is not None:
        with open_runtime() as runtime, reported():
            yield LocalDoor(runtime, as_email)
        return
    from benchgen.client import BenchGen

    try:
        client = BenchGen(url or "", token)
    except ValueError as exc:
        errors.print(Text(f"Error: {exc}", style="red"))
        raise typer.Exit(2) from None
    with client, reported():
        yield RemoteDoor(client)


@contextmanager
def reported() -> Iterator[None]:
    """Invalid input shows every problem with its place and line; other failures their message
    (domain errors here are left to `open_runtime`, which reports them the same way)."""
    from benchgen.client import ClientError, RunTimeout
    from benchgen.client import InvalidInput as RemoteInvalid

    try:
        yield
    except (InvalidInput, RemoteInvalid) as exc:
        errors.print(Text(f"Error: {exc.message}", style="red"))
        for problem in exc.errors:
            errors.print(Text(f"  {place(problem)}: {problem.get('msg', '')}"))
        raise typer.Exit(1) from None
    except ClientError as exc:
        errors.print(Text(f"Error: {exc.message}", style="red"))
        raise typer.Exit(1) from None
    except RunTimeout as exc:
        errors.print(Text(f"Error: {exc}", style="red"))
        raise typer.Exit(1) from None


def place(problem: Plain) -> str:
    """Where a problem is, e.g. `phases[0].tasks (line 12)`."""
    where = ""
    for part in problem.get("loc", []):
        where += f"[{part}]" if isinstance(part, int) else f"{'.' if where else ''}{part}"
    line = problem.get("line")
    return f"{where or 'bundle'}{f' (line {line})' if line else ''}"


ZipFile = Annotated[
    Path,
    typer.Argument(
        exists=True, dir_okay=False, readable=True, metavar="FILE", help="The .zip file to send."
    ),
]


@app.command("upload")
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
    """
    data = bundle.read_bytes()
    with door(as_email, url, token) as where:
        if to is None:
            created, view = where.upload(data, bundle.name)
            made = created["benchmark"]
            console.print(
                Text.assemble(
                    "Created custom benchmark ", (made["id"], "bold"), f": {made['title']}"
                )
            )
        else:
            view = where.upload_version(to, data, bundle.name)
        console.print(f"Bundle version {view['version']} ({view['size']} bytes).")
    _show_bundle(view)


def _show_bundle(view: Plain) -> None:
    for warning in view.get("warnings") or []:
        console.print(Text(f"Warning: {place(warning)}: {warning.get('msg', '')}", style="yellow"))
    solutions = view.get("solutions") or []
    if not solutions:
        console.print("The bundle has no solutions to check it with.")
        return
    table = Table("solution", "result", "scores", title="Solutions")
    for solution in solutions:
        result = Text("ok", "green") if solution["ok"] else Text("failed", "red")
        scores = ", ".join(f"{key} {value:g}" for key, value in solution["scores"].items())
        table.add_row(
            f"{solution['index']} {solution['name']}", result, scores or solution["error"]
        )
    console.print(table)
    if not all(solution["ok"] for solution in solutions):
        console.print(Text("A failing solution keeps the benchmark from being published.", "red"))


@app.command("download-bundle")
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
            "--output", "-o", metavar="FILE", help="Where to write it (default: ID-vN.zip here)."
        ),
    ] = None,
    force: Annotated[bool, typer.Option(help="Overwrite FILE if it exists.")] = False,
) -> None:
    """Save a custom benchmark's bundle exactly as it was uploaded (its owner and collaborators
    only: it holds the reference data and the solutions)."""
    with door(as_email, url, token) as where:
        name, data = where.download(benchmark_id, version)
    target = output or Path(name)
    if target.exists() and not force:
        errors.print(Text(f"Error: {target} exists; give --force to overwrite it.", style="red"))
        raise typer.Exit(1)
    target.write_bytes(data)
    console.print(Text(f"Wrote {len(data)} bytes to {target}."))


@app.command("submit")
def submit(
    benchmark_id: Annotated[str, typer.Argument(metavar="ID", help="Custom benchmark id (bm_…).")],
    submission: ZipFile,
    as_email: AsHere = None,
    url: Url = None,
    token: Token = None,
    phase: Annotated[
        int | None,
        typer.Option(min=0, metavar="N", help="The phase's index (default: the open one)."),
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
    """
    data = submission.read_bytes()
    with door(as_email, url, token) as where:
        run = where.submit(benchmark_id, data, submission.name, phase, kind.value)
        console.print(Text.assemble("Submission queued as run ", (run["id"], "bold"), "."))
        if wait:
            run = where.follow(run)
    if wait:
        _show_run(run)


def _show_run(run: Plain) -> None:
    style = "green" if run["status"] == "completed" else "red"
    console.print(Text.assemble((run["status"], style), f": run {run['id']}"))
    if run["scores"]:
        table = Table("score", "value")
        for key, value in run["scores"].items():
            table.add_row(key, f"{value:g}" if isinstance(value, float | int) else str(value))
        console.print(table)
    if run["status"] != "completed":
        console.print(Text(run["error"] or "No scores.", style="red"))
        raise typer.Exit(1)
