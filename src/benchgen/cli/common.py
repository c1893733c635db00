"""What every command shares: the runtime, units of work as the operator or a user, errors."""

from __future__ import annotations

import json
import re
import signal
import sys
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
from sqlalchemy import make_url
from sqlalchemy.exc import SQLAlchemyError

from benchgen.cli.configuration import load_settings
from benchgen.core.context import Context, Principal
from benchgen.core.errors import BenchGenError, InvalidInput, Unauthenticated
from benchgen.jobs.dispatching import dispatching
from benchgen.services.accounts import users
from benchgen.services.runtime import Runtime, build_runtime, transaction

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    from benchgen.core.config import Settings


class LazyConsole:
    """A Rich console made at its first use: `benchgen run` loads Rich only once its first
    model requests are out (Rich takes a few percent of a command's start).

    Strings are printed as they are, never read as Rich markup: names, titles and messages
    come from users (a model named "[/]" crashed a command; "[link=…]" hid a link in a name).
    Styled words go through `labelled` or Rich `Text`."""

    def __init__(self, *, soft_wrap: bool = False, stderr: bool = False) -> None:
        self.soft_wrap, self.stderr = soft_wrap, stderr

    @cached_property
    def rich(self) -> Console:
        """The console itself (for Rich's own widgets, such as a progress bar)."""
        from benchgen.cli.widths import PipeWideConsole

        return PipeWideConsole(soft_wrap=self.soft_wrap, stderr=self.stderr, markup=False)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.rich, name)


console = LazyConsole(soft_wrap=True)
As = Annotated[
    str, typer.Option("--as", metavar="EMAIL", help="Act as this user (audited as the cli door).")
]
# Commands that work here or on a server take one or the other: `--as` (this machine's database)
# or `--url` with `--token` (a server's API).
AsHere = Annotated[
    str | None,
    typer.Option(
        "--as", metavar="EMAIL", help="Act as this user on this machine (audited as the cli door)."
    ),
]
Url = Annotated[
    str | None, typer.Option(metavar="URL", help="A remote server, e.g. https://bench.example")
]
Token = Annotated[
    str | None,
    typer.Option(envvar="BENCHGEN_TOKEN", metavar="TOKEN", help="Personal API token for --url."),
]
# Soft-wrapped as the output is: an error is one line, which a log or a pipe keeps whole (wrapped
# at 80 columns it broke mid-sentence, and a long path or id in two).
errors = LazyConsole(soft_wrap=True, stderr=True)
OPERATOR = Principal.cli()
# What `json.dumps` leaves unescaped that a terminal acts on (it escapes the C0 controls).
RAW_IN_JSON = re.compile("[\x7f-\x9f]")


def wrapping_table(*headers: str, title: str | None = None) -> Table:
    """A Rich table whose cells wrap rather than end in "…": in a narrow terminal a table of
    dates, scopes or names cut to fit lost them (`list-tokens` showed "2027-…")."""
    from rich.table import Column, Table

    return Table(*(Column(header, overflow="fold") for header in headers), title=title)


def cell(row: Mapping[str, Any], key: str) -> str:
    """A row's `key` as a table shows it: blank when missing or None. A server of another
    version may send rows without a field the table has (a KeyError, a traceback, before)."""
    value = row.get(key)
    return "" if value is None else str(value)


def print_json(value: Any) -> None:
    """`value` as indented JSON on stdout, valid whatever its texts hold. Rich's `print_json`
    showed DEL and C1 controls (U+007F to U+009F, which JSON leaves raw) as `\\x85`, an escape
    JSON does not have: a name holding one made `--json` output that no parser reads. Here
    they are `\\u0085`, valid JSON that no terminal acts on."""
    text = json.dumps(value, indent=2, ensure_ascii=False)
    typer.echo(RAW_IN_JSON.sub(lambda found: f"\\u{ord(found.group()):04x}", text))


def print_table(table: Table, empty: str) -> None:
    """`table`, or `empty` when it has no rows: a grid of headers alone read as a failure.

    In a terminal narrower than the table's least width the table keeps that width, and the
    terminal wraps its lines: fitted, Rich cut the unwrapped columns, ids included, and gave a
    wrapping one no room at all (at 50 columns `benchmarks list` showed no titles, and ids one
    character short)."""
    if not table.row_count:
        console.print(empty)
        return
    from rich.measure import Measurement

    from benchgen.cli.widths import UNBOUNDED, PipeWideConsole

    least = Measurement.get(console.rich, console.options.update_width(UNBOUNDED), table).minimum
    if least <= console.width:
        console.print(table)
        return
    # Rich renders nothing wider than its console: a console of that width, on the same stream.
    PipeWideConsole(file=console.file, width=least, markup=False).print(table)


def labelled(label: str, message: str, style: str = "red", to: LazyConsole = errors) -> None:
    """`label` in `style`, then `message` as plain text: "Error: …" on stderr by default."""
    from rich.text import Text

    to.print(Text.assemble((label, style), " ", message))


def save_download(target: Path, data: bytes, force: bool) -> None:
    """Write a download to `target` (`-`: standard output), saying where it went; a folder, a
    file in the way without `force`, or a folder that does not exist is one line, exit 1."""
    if str(target) == "-":
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
        return
    if target.exists() and not force:
        # A folder is not overwritten, --force or not: saying "give --force" led to a second
        # refusal.
        if target.is_dir():
            say_error(f"{target} is a folder; give -o the name of a file to write.")
        else:
            say_error(f"{target} exists; give --force to overwrite it.")
        raise typer.Exit(1)
    try:
        target.write_bytes(data)
    except OSError as exc:
        say_error(f"cannot write {target}: {exc.strerror or exc}.")
        raise typer.Exit(1) from None
    console.print(f"Wrote {len(data)} bytes to {target}.")


def read_within(path: Path, limit: int, setting: str) -> bytes:
    """The bytes of `path`, refused (one line, exit 1) when over `limit`: by its size before a
    byte is read, and by what was read for a file whose size the system does not know (a
    pipe). A 5 GB file was read whole into memory, to be refused by its length afterwards."""
    if path.stat().st_size > limit:
        _say_too_large(path, limit, setting)
    with path.open("rb") as source:
        data = source.read(limit + 1)
    if len(data) > limit:
        _say_too_large(path, limit, setting)
    return data


def _say_too_large(path: Path, limit: int, setting: str) -> NoReturn:
    say_error(f"{path} is larger than the limit of {limit:,} bytes (set by {setting}).")
    raise typer.Exit(1)


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised as Ctrl-C is, so a command stops the same way: with exit status 143."""


def _terminated(signum: int, frame: object) -> NoReturn:
    raise Terminated


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Read SIGTERM (systemd, `docker stop`) as Ctrl-C in the block, so that a command stops
    as it would on Ctrl-C: by default the signal ended the process at once, mid-job. The
    exception is `Terminated`, so the command can exit 143 rather than Ctrl-C's 130. Only
    the main thread may set a handler; in another (a test's) the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def interrupted_status(stop: KeyboardInterrupt) -> int:
    """The shell's exit status for an interrupt: 143 (128 + 15) for SIGTERM, 130 for Ctrl-C."""
    return 143 if isinstance(stop, Terminated) else 130


def one_place(as_email: str | None, url: str | None) -> None:
    """Refuse, with exit status 2, anything but one of `--as` and `--url`: given both, it said
    "give either --as or --url", which the user had."""
    if as_email is not None and url is not None:
        say_error("give --as EMAIL (this machine) or --url URL (remote), not both.")
        raise typer.Exit(2)
    if as_email is None and url is None:
        say_error("give either --as EMAIL (this machine) or --url URL (remote).")
        raise typer.Exit(2)


def say_error(message: str) -> None:
    """One "Error: …" line on stderr."""
    labelled("Error:", message)


@contextmanager
def open_runtime() -> Iterator[Runtime]:
    """The configured runtime (database migrated); domain errors, and a database or data
    folder that cannot be opened, end the command cleanly."""
    settings = load_settings()
    try:
        runtime = build_runtime(settings)
    except BenchGenError as exc:
        say_error(exc.message)
        raise typer.Exit(1) from None
    except (SQLAlchemyError, OSError) as exc:
        say_error(unopened(settings, exc))
        raise typer.Exit(1) from None
    try:
        with dispatching(runtime.settings):
            yield runtime
    except BenchGenError as exc:
        say_error(exc.message)
        raise typer.Exit(1) from None
    finally:
        runtime.close()


def unopened(settings: Settings, exc: SQLAlchemyError | OSError) -> str:
    """One line on why the database could not be opened, naming the setting to check (the
    URL is shown without its password)."""
    if isinstance(exc, OSError):
        where = exc.filename or settings.data_dir
        # A file where the folder should be made said "File exists", as if that were fine.
        why = "a file is there, not a folder" if isinstance(exc, FileExistsError) else None
        return f"cannot use {where}: {why or exc.strerror or exc}; check BENCHGEN_DATA_DIR."
    cause = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
    shown = make_url(settings.resolved_database_url()).render_as_string(hide_password=True)
    return f"cannot open the database {shown}: {cause}; check BENCHGEN_DATABASE_URL."


@contextmanager
def by_option(options: dict[str, str]) -> Iterator[None]:
    """Refusals in the block placed by the option the operator typed rather than the service's
    field: `options` maps a field's dotted place (`settings.samples`) to its option.

    A refused option value is a usage error, exit status 2 as Click gives its own (`--samples
    0` exited 1, while `--version 0`, which Click checks, exited 2); other refusals go on."""
    try:
        yield
    except InvalidInput as exc:
        problems = [
            {**problem, "loc": optioned(problem.get("loc", []), options)} for problem in exc.errors
        ]
        first = problems[0] if problems else {}
        where = ".".join(str(part) for part in first.get("loc", []))
        message = f"{where}: {first.get('msg', '')}" if where else exc.message
        if where.startswith("--"):
            say_error(message)
            raise typer.Exit(2) from None
        raise InvalidInput(message, problems) from None


def optioned(loc: list[Any], options: dict[str, str]) -> list[Any]:
    """`loc` with its longest prefix that names an option replaced by that option."""
    for length in range(len(loc), 0, -1):
        option = options.get(".".join(str(part) for part in loc[:length]))
        if option is not None:
            return [option, *loc[length:]]
    return list(loc)


def prepare(runtime: Runtime) -> None:
    """Start-up work of serving commands: offer the bundled local model if it is installed."""
    # The model catalogue loads here, for serving commands alone: `benchgen run` has no use
    # for its request shapes, and starts sooner without them.
    from benchgen.services import models

    with as_operator(runtime) as ctx:
        models.register_local_models(ctx)


@contextmanager
def as_operator(runtime: Runtime) -> Iterator[Context]:
    """A unit of work as the operator (admin powers, no user)."""
    with transaction(runtime, OPERATOR) as ctx:
        yield ctx


def cli_principal(runtime: Runtime, email: str) -> Principal:
    """The principal of `--as EMAIL`: that user, audited as the `cli` door.

    Raises:
        Unauthenticated: the account is disabled (said as such: the operator may enable it).
    """
    with as_operator(runtime) as ctx:
        user = users.get_user_by_email(ctx, email)
    if not user.is_active:
        raise Unauthenticated(
            f"{user.email} is disabled; `benchgen admin enable-user --email {user.email}` "
            "enables it again."
        )
    return Principal.cli(user.id)


@contextmanager
def as_user(runtime: Runtime, email: str) -> Iterator[Context]:
    """A unit of work acting `--as` a user, audited as the `cli` door."""
    with transaction(runtime, cli_principal(runtime, email)) as ctx:
        yield ctx
