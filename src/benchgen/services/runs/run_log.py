"""Reading a run's live log (short progress lines, written redacted by `_log_writer`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select

from benchgen.core.context import Context
from benchgen.core.permissions import Action
from benchgen.db.tables import RunLogLine
from benchgen.services import access


@dataclass(frozen=True)
class LogLine:
    """One line of a run's log."""

    id: int
    at: datetime
    line: str


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
