"""The long-lived pieces composition builds once, and how edges open a unit of work."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from benchgen.core.clock import Clock, SystemClock
from benchgen.core.config import Settings
from benchgen.core.context import Context, Principal
from benchgen.core.errors import Unavailable
from benchgen.core.secrets import redact_secrets
from benchgen.db import migrate
from benchgen.db.session import Database, database_words, is_busy, is_unreachable

# Seconds a client is asked to wait after the database was busy: locks and pool waits last
# milliseconds to seconds, so a short pause is enough and a long one would only idle clients.
BUSY_RETRY_AFTER_S = 1


@dataclass
class Runtime:
    """Long-lived pieces shared by every request, command and job in one process."""

    settings: Settings
    database: Database
    clock: Clock = field(default_factory=SystemClock)

    def close(self) -> None:
        """Release database connections."""
        self.database.dispose()


def build_runtime(settings: Settings, clock: Clock | None = None) -> Runtime:
    """Open (creating or migrating as needed) the configured database."""
    database = Database(settings.resolved_database_url(), settings.sqlite_busy_timeout_ms)
    migrate.upgrade(database)
    return Runtime(settings, database, clock or SystemClock())


@contextmanager
def transaction(runtime: Runtime, principal: Principal, write: bool = True) -> Iterator[Context]:
    """One unit of work: commits when the block ends normally, rolls back on any error.

    Edges own the transaction through this, so an invalid request changes nothing.

    Raises:
        Unavailable: the database was busy (locked, no free connection, a serialisation
            conflict); the work was rolled back and may be retried as it is.
    """
    session = runtime.database.session(write=write)
    try:
        yield Context(session, principal, runtime.settings, runtime.clock)
        session.commit()
    except BaseException as exc:
        session.rollback()
        if isinstance(exc, Exception) and is_busy(exc):
            # Overload is an answer every edge can give (503, a retry hint), not a crash.
            state = "out of reach" if is_unreachable(exc) else "busy"
            raise Unavailable(
                f"The database is {state}; nothing was changed. Try again shortly.",
                BUSY_RETRY_AFTER_S,
            ) from exc
        raise
    finally:
        session.close()


@contextmanager
def undo_on_error(ctx: Context) -> Iterator[None]:
    """A savepoint around one service call: if the block raises, what it wrote is undone and
    the error goes on. An edge that catches a refusal to show it (a form shown again with the
    problem) then commits nothing of the refused work, as if the request had failed."""
    with ctx.session.begin_nested():
        yield


def failure_text(error: Exception) -> str:
    """How a failed piece of work is recorded where its owner reads it (a run's error): a
    database error in the database's own words, not with the statement and the rows being
    written; any secret redacted."""
    return redact_secrets(database_words(error) or f"{type(error).__name__}: {error}")
