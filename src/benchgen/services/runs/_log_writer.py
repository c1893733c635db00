"""Writing a run's live log (secrets redacted before they are stored), without permission checks:
for the run services that launch, execute and cancel the run."""

from __future__ import annotations

from benchgen.core.context import Context
from benchgen.db.tables import RunLogLine
from benchgen.evals.redact import redact


def append(ctx: Context, run_id: str, line: str, secrets: tuple[str, ...] = ()) -> None:
    """Add a line (redacted) in the caller's transaction."""
    ctx.session.add(RunLogLine(run_id=run_id, at=ctx.now(), line=redact(line, secrets)[:2000]))


def mark(ctx: Context, run_id: str, line: str) -> int:
    """Add a line now (flushed) and return its id, which later lines exceed."""
    entry = RunLogLine(run_id=run_id, at=ctx.now(), line=redact(line, ())[:2000])
    ctx.session.add(entry)
    ctx.session.flush()
    return entry.id
