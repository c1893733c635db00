"""The long-lived pieces composition builds once, and how edges open a unit of work."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from benchgen.core.clock import Clock, SystemClock
from benchgen.core.config import Settings
from benchgen.core.context import Context, Principal
from benchgen.db import migrate
from benchgen.db.session import Database


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
    """
    session = runtime.database.session(write=write)
    try:
        yield Context(session, principal, runtime.settings, runtime.clock)
        session.commit()
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()
