"""Putting a job on the queue and taking it off before it starts, without permission checks: for
the service that owns the job (launching or cancelling a run), which has checked permission."""

from __future__ import annotations

from typing import Any

from sqlalchemy import event

from benchgen.core.context import Context
from benchgen.core.ids import new_id
from benchgen.core.statuses import JobStatus
from benchgen.db.tables import Job
from benchgen.services.queue import QUEUED_KEY, jobs_committed, wake_workers


def enqueue(
    ctx: Context,
    kind: str,
    payload: dict[str, Any],
    max_attempts: int = 3,
    user_id: str | None = None,
) -> str:
    """Queue a job in the caller's transaction (it exists only if the caller commits).

    `user_id` is whom the job works for (default: the acting user); their jobs share the
    per-user slots.
    """
    now = ctx.now()
    job = Job(
        id=new_id("job"),
        kind=kind,
        user_id=user_id or ctx.principal.user_id,
        payload=payload,
        status=JobStatus.QUEUED,
        attempts=0,
        max_attempts=max_attempts,
        run_after=now,
        created_at=now,
        updated_at=now,
    )
    ctx.session.add(job)
    ctx.session.info.setdefault(QUEUED_KEY, []).append((job.id, kind))
    event.listen(ctx.session, "after_commit", wake_workers, once=True)
    if not event.contains(ctx.session, "after_commit", jobs_committed):
        event.listen(ctx.session, "after_commit", jobs_committed)
    return job.id


def cancel_queued(ctx: Context, job_id: str) -> None:
    """Cancel a job that has not started (the service that owns the job checked permission)."""
    job = ctx.session.get(Job, job_id)
    if job is not None and job.status == JobStatus.QUEUED:
        job.status, job.updated_at = JobStatus.CANCELLED, ctx.now()
