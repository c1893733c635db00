"""A run's live log: short progress lines, with secrets redacted before they are stored."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select

from benchgen.core.context import Context
from benchgen.core.permissions import Action
from benchgen.db.tables import RunLogLine
from benchgen.evals.redact import redact
from benchgen.services import access


@dataclass(frozen=True)
class LogLine:
    """One line of a run's log."""

    id: int
    at: datetime
    line: str


def append(ctx: Context, run_id: str, line: str, secrets: tuple[str, ...] = ()) -> None:
    """Add a line (redacted) in the caller's transaction."""
    ctx.session.add(RunLogLine(run_id=run_id, at=ctx.now(), line=redact(line, secrets)[:2000]))


def mark(ctx: Context, run_id: str, line: str) -> int:
    """Add a line now (flushed) and return its id, which later lines exceed."""
    entry = RunLogLine(run_id=run_id, at=ctx.now(), line=redact(line, ())[:2000])
    ctx.session.add(entry)
    ctx.session.flush()
    return entry.id


def read_log(ctx: Context, run_id: str, after: int = 0, limit: int = 1000) -> list[LogLine]:
    """Lines after the id `after` (for following a live run).

    Raises:
        NotFound: the run is not visible to the principal.
    """
    access.require_run(ctx, run_id, Action.RUN_READ)
    rows = ctx.session.scalars(
        select(RunLogLine)
        .where(RunLogLine.run_id == run_id, RunLogLine.id > after)
        .order_by(RunLogLine.id)
        .limit(min(max(limit, 1), 5000))
    )
    return [LogLine(row.id, row.at, row.line) for row in rows]
