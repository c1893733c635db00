"""Where `benchgen` commands act: this machine's database (`--as`) or a server's API (`--url`)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import typer
from pydantic import TypeAdapter
from rich.text import Text

from benchgen.cli.common import (
    cli_principal,
    console,
    errors,
    one_place,
    open_runtime,
    read_within,
    say_error,
)
from benchgen.cli.runs import follow_run, progress_bar
from benchgen.core.errors import InvalidInput
from benchgen.services.benchmarks import bundles, exports, imports, lifecycle
from benchgen.services.runs import submissions
from benchgen.services.runtime import Runtime, transaction
from benchgen.services.specs import MAX_LIST

# The HTTP client loads only for --url: commands run here never need it.
if TYPE_CHECKING:
    from benchgen.client import BenchGen

WHERE = (
    "\n\n[bold]Where:[/] --as EMAIL works on this machine's database (audited as the cli door); "
    "--url URL with --token (or BENCHGEN_TOKEN) works on a remote server through its API, with "
    "a personal token that has the scope the action needs. Give one or the other."
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


class ExportFormat(StrEnum):
    """What a benchmark is exported as."""

    JSONL = "jsonl"
    INSPECT = "inspect"
    LM_EVAL = "lm_eval"


class Door(Protocol):
    """Where commands act: this machine's services, or a server's API (answers as the API's)."""

    def list_benchmarks(self, mine: bool, search: str) -> list[Plain]:
        """Every benchmark the user may see (only their own with `mine`), newest first."""

    def import_file(self, file: Path, spec: Plain) -> Plain:
        """A new benchmark from a file of questions, with its warnings."""

    def export(self, benchmark_id: str, fmt: str) -> tuple[str, bytes]:
        """A benchmark's export: its file name and bytes."""

    def upload(self, file: Path) -> tuple[Plain, Plain]:
        """A new custom benchmark: (the created benchmark with warnings, its bundle)."""

    def upload_version(self, benchmark_id: str, file: Path) -> Plain:
        """The bundle after a new version."""

    def download(self, benchmark_id: str, version: int | None) -> tuple[str, bytes]:
        """A bundle version's file name and bytes."""

    def submit(self, benchmark_id: str, file: Path, phase: int | None, kind: str) -> Plain:
        """The queued run of a submission."""

    def follow(self, run: Plain) -> Plain:
        """The run once it ended, showing progress meanwhile."""


class LocalDoor:
    """This machine's database, acting as a user through the cli door. A file over this
    machine's limit for it is refused by its size, before it is read."""

    def __init__(self, runtime: Runtime, email: str) -> None:
        self.runtime, self.email = runtime, email
        self.principal = cli_principal(runtime, email)

    def list_benchmarks(self, mine: bool, search: str) -> list[Plain]:
        found: list[Plain] = []
        with transaction(self.runtime, self.principal, write=False) as ctx:
            while True:
                page = lifecycle.list_benchmarks(ctx, mine, search, MAX_LIST, len(found))
                found += [plain(view) for view in page]
                if len(page) < MAX_LIST:
                    return found

    def import_file(self, file: Path, spec: Plain) -> Plain:
        limit = self.runtime.settings.max_import_bytes
        data = read_within(file, limit, "BENCHGEN_MAX_IMPORT_BYTES")
        with transaction(self.runtime, self.principal) as ctx:
            created = imports.import_file(ctx, data, file.name, spec)
        return {"benchmark": plain(created.benchmark), "warnings": created.warnings}

    def export(self, benchmark_id: str, fmt: str) -> tuple[str, bytes]:
        with transaction(self.runtime, self.principal, write=False) as ctx:
            found = exports.export_benchmark(ctx, benchmark_id, fmt)
        return found.filename, found.data

    def upload(self, file: Path) -> tuple[Plain, Plain]:
        data, filename = self._bundle(file), file.name
        # The programs run between the two units of work: a write one would hold SQLite's
        # write lock, and stop the server's every write, for as long as they take.
        with transaction(self.runtime, self.principal, write=False) as ctx:
            pending = bundles.check_bundle(ctx, data, filename)
        checked = pending.inspect()
        with transaction(self.runtime, self.principal) as ctx:
            created = bundles.upload_bundle(ctx, data, filename, checked)
            view = bundles.get_bundle(ctx, created.benchmark.id)
        return {"benchmark": plain(created.benchmark), "warnings": created.warnings}, plain(view)

    def upload_version(self, benchmark_id: str, file: Path) -> Plain:
        data, filename = self._bundle(file), file.name
        # As `upload`: checked, then inspected with no unit of work open, then stored.
        with transaction(self.runtime, self.principal, write=False) as ctx:
            pending = bundles.check_bundle(ctx, data, filename, benchmark_id)
        checked = pending.inspect()
        with transaction(self.runtime, self.principal) as ctx:
            view = bundles.upload_bundle_version(ctx, benchmark_id, data, filename, checked)
        return plain(view)

    def _bundle(self, file: Path) -> bytes:
        limit = self.runtime.settings.max_bundle_bytes
        return read_within(file, limit, "BENCHGEN_MAX_BUNDLE_BYTES")

    def download(self, benchmark_id: str, version: int | None) -> tuple[str, bytes]:
        with transaction(self.runtime, self.principal, write=False) as ctx:
            found = bundles.download_bundle(ctx, benchmark_id, version)
        return found.filename, found.data

    def submit(self, benchmark_id: str, file: Path, phase: int | None, kind: str) -> Plain:
        limit = self.runtime.settings.max_submission_bytes
        data = read_within(file, limit, "BENCHGEN_MAX_SUBMISSION_BYTES")
        with transaction(self.runtime, self.principal) as ctx:
            return plain(submissions.submit(ctx, benchmark_id, data, file.name, phase, kind))

    def follow(self, run: Plain) -> Plain:
        return plain(follow_run(self.runtime, self.email, run["id"], run["question_count"]))


class RemoteDoor:
    """A server's API, through the Python client and a personal token. Files are sent as
    they are read, never held whole: the server refuses one over its limit by its length."""

    def __init__(self, client: BenchGen) -> None:
        self.client = client

    def list_benchmarks(self, mine: bool, search: str) -> list[Plain]:
        return [dict(row) for row in self.client.list_benchmarks(mine, search)]

    def import_file(self, file: Path, spec: Plain) -> Plain:
        created = self.client.import_file(
            file,
            spec["title"],
            spec["format"],
            spec["file_format"],
            spec["preset"],
            spec["mapping"],
            spec["description"],
        )
        return dict(created)

    def export(self, benchmark_id: str, fmt: str) -> tuple[str, bytes]:
        data = self.client.export_benchmark(benchmark_id, ExportFormat(fmt).value)
        # Named as the server names it: the id, never the title, so no user text names a file.
        if fmt == ExportFormat.JSONL:
            return f"{benchmark_id}.jsonl", data
        return f"{exports.task_name(benchmark_id)}_{fmt}.zip", data

    def upload(self, file: Path) -> tuple[Plain, Plain]:
        created = self.client.upload_bundle(file)
        return dict(created), dict(self.client.get_bundle(created["benchmark"]["id"]))

    def upload_version(self, benchmark_id: str, file: Path) -> Plain:
        return dict(self.client.upload_bundle_version(benchmark_id, file))

    def download(self, benchmark_id: str, version: int | None) -> tuple[str, bytes]:
        # Named as the server names it, which needs the version even when the newest is asked.
        number = version or self.client.get_bundle(benchmark_id)["version"]
        return f"{benchmark_id}-v{number}.zip", self.client.download_bundle(benchmark_id, number)

    def submit(self, benchmark_id: str, file: Path, phase: int | None, kind: str) -> Plain:
        return dict(self.client.submit(benchmark_id, file, phase, Kind(kind).value))

    def follow(self, run: Plain) -> Plain:
        try:
            with progress_bar() as progress:
                task = progress.add_task("Processing", total=run["question_count"])
                done = self.client.wait_for_run(
                    run["id"],
                    timeout_s=WAIT_S,
                    on_progress=lambda now: progress.update(task, completed=now["done_count"]),
                )
        except KeyboardInterrupt:
            # The server works on the run, not this process: Ctrl-C stops only the following,
            # and says so (it ended silently, leaving the user to guess whether it cancelled).
            console.print(f"Stopped following run {run['id']}; the server goes on with it.")
            raise typer.Exit(130) from None
        return dict(done)


def plain(value: Any) -> Plain:
    """A service's answer as the API sends it (JSON types), so both doors print alike."""
    dumped: Plain = TypeAdapter(type(value)).dump_python(value, mode="json")
    return dumped


@contextmanager
def door(as_email: str | None, url: str | None, token: str | None) -> Iterator[Door]:
    """The door the options name; every refusal ends the command with its message."""
    one_place(as_email, url)
    if as_email is not None:
        with open_runtime() as runtime, reported():
            yield LocalDoor(runtime, as_email)
        return
    from benchgen.client import BenchGen

    try:
        client = BenchGen(url or "", token)
    except ValueError as exc:
        say_error(str(exc))
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
        # An imported file's problems are by line (text files) or row (Parquet, Arrow), as the
        # message names the first one.
        word = "row" if exc.message.startswith("row ") else "line"
        problems = exc.errors
        msg = str(problems[0].get("msg", "")) if len(problems) == 1 else ""
        if msg and exc.message.endswith(msg):
            # The message is that one problem already: say it once, in the list's spelling.
            where = f"{place(problems[0], word)}: " if problems[0].get("loc") else ""
            say_error(f"{where}{msg}")
            raise typer.Exit(1) from None
        say_error(exc.message)
        for problem in problems:
            errors.print(Text(f"  {place(problem, word)}: {problem.get('msg', '')}"))
        raise typer.Exit(1) from None
    except ClientError as exc:
        say_error(exc.message)
        raise typer.Exit(1) from None
    except RunTimeout as exc:
        say_error(str(exc))
        raise typer.Exit(1) from None


# The parts of an HTTP request a problem's `loc` may start with (`["body", "file", 3]`).
REQUEST_PARTS = ("body", "query", "path", "header")


def place(problem: Plain, word: str = "line") -> str:
    """Where a problem is, e.g. `phases[0].tasks (line 12)`, in an archive `bundle ../x.txt`,
    or in an imported file `line 3: answer`."""
    loc = list(problem.get("loc", []))
    if len(loc) > 1 and loc[0] in REQUEST_PARTS:
        # The API leads a field with the part of the request that carried it; this command
        # wrote that request, so only the field means anything to the person who typed it.
        loc = loc[1:]
    if len(loc) >= 2 and loc[0] == "file" and isinstance(loc[1], int):
        return ", ".join([f"{word} {loc[1]}", *(str(part) for part in loc[2:])])
    where = ""
    for part in loc:
        if isinstance(part, int):
            where += f"[{part}]"
        elif where and not str(part).isidentifier():
            where += f" {part}"  # a path in an archive, which a dot would run into
        else:
            where += f"{'.' if where else ''}{part}"
    line = problem.get("line")
    return f"{where or 'bundle'}{f' (line {line})' if line else ''}"
