"""The job queue's rules for workers holding the grant for a job's kind: claim fairly with a
lease, heartbeat, retry, give up. Jobs are queued and cancelled through `_enqueue`.

The jobs table is the truth, so one machine needs no broker and a crashed worker's job is
picked up again once its lease expires. Claims serve users in turn and cap how many jobs one user
has executing at once, counted in the table, so the cap holds across worker processes.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, and_, func, or_, select
from sqlalchemy.orm import aliased

from benchgen.core.config import Settings
from benchgen.core.context import Context
from benchgen.core.permissions import Action
from benchgen.core.statuses import JobStatus
from benchgen.db.tables import Job
from benchgen.services import access
from benchgen.services.accounts import users

# Which grant a system principal needs to work on each kind of job.
JOB_ACTIONS: dict[str, Action] = {
    "run": Action.RUN_EXECUTE,
    "bundle_run": Action.RUN_EXECUTE,
    "training": Action.TRAINING_EXECUTE,
}
BACKOFF_BASE_S = 5


class Postponed(Exception):
    """A handler's job cannot start yet (what it needs is busy): queue it again, `seconds` on,
    without counting the attempt."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"postponed for {seconds} s")
        self.seconds = seconds


@dataclass(frozen=True)
class Claimed:
    """A job a worker now holds. `exhausted` means its attempts ran out while nobody held it
    (a crashed worker): the worker must only record the failure."""

    id: str
    kind: str
    payload: dict[str, Any]
    attempt: int
    exhausted: bool


# The embedded workers of this process wait on this between polls of the table. A commit that
# queued a job sets it, so a run launched here starts at once, not at the next poll (up to a
# quarter of a second later); workers in other processes still find it by polling.
_work_queued = threading.Event()


def wait_for_work(timeout_s: float) -> None:
    """Sleep until a job is queued in this process (or `wake_workers`), `timeout_s` at most."""
    _work_queued.wait(timeout_s)
    # Cleared before the next claim: a job queued after this is seen by that claim, or sets
    # the event again for the wait after it. No wake-up is lost.
    _work_queued.clear()


def wake_workers(*_: object) -> None:
    """End every `wait_for_work` of this process now (a job was queued, or workers stop); as
    the after-commit hook it receives the session."""
    _work_queued.set()


def user_slots(settings: Settings) -> int:
    """Jobs one user may have executing at once: BENCHGEN_USER_RUN_SLOTS, else half of this
    deployment's worker threads (BENCHGEN_WORKER_THREADS), at least one."""
    return settings.user_run_slots or max(1, settings.worker_threads // 2)


def claim(ctx: Context, worker: str, lease: timedelta) -> Claimed | None:
    """Take a due job of a kind this principal is granted (or one whose lease expired), serving
    users in turn: the user with the fewest executing jobs first, then the oldest job; a user
    who already holds `user_slots` executing jobs waits, so one user cannot starve the rest.

    PostgreSQL: `FOR UPDATE SKIP LOCKED`, so workers never wait on each other's rows. SQLite:
    the write transaction holds the database lock from its first statement.
    """
    kinds = [kind for kind, action in JOB_ACTIONS.items() if access.can(ctx, action)]
    now, slots = ctx.now(), user_slots(ctx.settings)
    due = or_(
        and_(Job.status == JobStatus.QUEUED, Job.run_after <= now),
        and_(Job.status == JobStatus.RUNNING, Job.lease_expires_at < now),
    )
    busy = _executing_for_job_user(now)
    job = ctx.session.scalar(
        select(Job)
        .where(Job.kind.in_(kinds), due, or_(Job.user_id.is_(None), _exhausted(), busy < slots))
        .order_by(busy, Job.run_after, Job.id)
        .limit(1)
        .with_for_update(skip_locked=True)
    )
    if job is None:
        return None
    exhausted = job.status == JobStatus.RUNNING and job.attempts >= job.max_attempts
    if not exhausted and not _slot_still_free(ctx, job.user_id, slots, now):
        return None
    job.status, job.lease_owner, job.updated_at = JobStatus.RUNNING, worker, now
    job.lease_expires_at = now + lease
    if not exhausted:
        job.attempts += 1
    return Claimed(job.id, job.kind, dict(job.payload), job.attempts, exhausted)


def heartbeat(ctx: Context, job_id: str, worker: str, lease: timedelta) -> bool:
    """Extend the lease; False when this worker no longer holds the job."""
    job = _held(ctx, job_id, worker)
    if job is None:
        return False
    job.lease_expires_at = ctx.now() + lease
    return True


def finish(
    ctx: Context, job_id: str, worker: str, status: JobStatus = JobStatus.DONE, error: str = ""
) -> None:
    """Mark a held job done, failed or cancelled (a lost lease makes this a no-op)."""
    job = _held(ctx, job_id, worker)
    if job is None:
        return
    job.status, job.error, job.updated_at = status, error[:2000], ctx.now()
    job.lease_expires_at = None


def retry_later(ctx: Context, job_id: str, worker: str, error: str) -> bool:
    """Put a failed attempt back in the queue with exponential backoff; False when it is out
    of attempts (then the caller records the failure)."""
    job = _held(ctx, job_id, worker)
    if job is None or job.attempts >= job.max_attempts:
        return False
    delay = timedelta(seconds=BACKOFF_BASE_S * 2 ** (job.attempts - 1))
    job.status, job.error, job.run_after = JobStatus.QUEUED, error[:2000], ctx.now() + delay
    job.lease_owner = job.lease_expires_at = None
    job.updated_at = ctx.now()
    return True


def postpone(ctx: Context, job_id: str, worker: str, seconds: float) -> None:
    """Put a held job back in the queue for later without spending an attempt (a no-op when
    the lease was lost)."""
    job = _held(ctx, job_id, worker)
    if job is None:
        return
    job.status, job.run_after = JobStatus.QUEUED, ctx.now() + timedelta(seconds=seconds)
    job.attempts = max(job.attempts - 1, 0)
    job.lease_owner = job.lease_expires_at = None
    job.updated_at = ctx.now()


def _executing(now: datetime, jobs: Any = Job) -> ColumnElement[bool]:
    """Held by a live worker: an expired lease is a crashed worker's, free to be taken over."""
    return and_(jobs.status == JobStatus.RUNNING, jobs.lease_expires_at >= now)


def _executing_for_job_user(now: datetime) -> Any:
    """How many jobs the candidate job's user has executing (a correlated subquery)."""
    other = aliased(Job)
    return (
        select(func.count())
        .select_from(other)
        .where(other.user_id == Job.user_id, _executing(now, other))
        .correlate(Job)
        .scalar_subquery()
    )


def _exhausted() -> ColumnElement[bool]:
    """Out of attempts while nobody held it: claimed only to record the failure, never capped."""
    return and_(Job.status == JobStatus.RUNNING, Job.attempts >= Job.max_attempts)


def _slot_still_free(ctx: Context, user_id: str | None, slots: int, now: datetime) -> bool:
    """Count the user's executing jobs again under their row lock.

    On PostgreSQL the claim query reads a snapshot: two workers can both see the user below the
    cap while the other's claim is uncommitted, and SKIP LOCKED hands them different jobs. The
    lock makes the second wait for the first to commit, and the recount then sees its claim.
    """
    if user_id is None:
        return True
    users.lock_user(ctx, user_id)
    executing = ctx.session.scalar(
        select(func.count()).select_from(Job).where(Job.user_id == user_id, _executing(now))
    )
    return int(executing or 0) < slots


def _held(ctx: Context, job_id: str, worker: str) -> Job | None:
    """The job if `worker` holds it; the principal must hold the grant for its kind."""
    job = ctx.session.get(Job, job_id)
    if job is None:
        return None
    access.require(ctx, JOB_ACTIONS[job.kind])
    return job if job.status == JobStatus.RUNNING and job.lease_owner == worker else None
