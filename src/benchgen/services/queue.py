"""The job queue's rules for workers holding the grant for a job's kind: claim fairly with a
lease, heartbeat, retry, give up. Jobs are queued and cancelled through `_enqueue`.

The jobs table is the truth, so one machine needs no broker and a crashed worker's job is
picked up again once its lease expires. Claims serve users in turn and cap how many jobs one user
has executing at once, counted in the table, so the cap holds across worker processes.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, Select, Subquery, and_, case, func, or_, select
from sqlalchemy.orm import Session, aliased

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
    "rejudge": Action.RUN_EXECUTE,  # a completed run's failed judging, done again
    "training": Action.TRAINING_EXECUTE,
}
# The queues workers subscribe to (`benchgen worker --queues`) and the job kinds each carries:
# training and organisers' programs can be routed to the machines that have the compute.
QUEUES: dict[str, frozenset[str]] = {
    "runs": frozenset({"run", "rejudge"}),
    "scoring": frozenset({"bundle_run"}),
    "training": frozenset({"training"}),
}
QUEUE_OF = {kind: name for name, kinds in QUEUES.items() for kind in kinds}
# The kinds that take one of their user's slots: runs, and judging done again (left out, one
# user asking for many runs' judging again held every worker, their runs capped or not).
# Training has its own limit (the compute pools) and lasts hours: counted here, one job held
# back every run of its owner for as long.
SLOT_KINDS = ("run", "bundle_run", "rejudge")
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
    (a crashed worker): the worker must only record the failure. `lease_lost` is set once a
    heartbeat, or a write that checks `holds`, finds another worker took the job over (this one
    stalled past its lease): from then on the job is theirs, and this worker must stop without
    recording anything. `worker` is the name of the worker that claimed it; `taken_over_from`
    the worker whose lease on it ran out (it died), if any."""

    id: str
    kind: str
    payload: dict[str, Any]
    attempt: int
    exhausted: bool
    worker: str = ""
    taken_over_from: str = ""
    lease_lost: threading.Event = field(default_factory=threading.Event, compare=False, repr=False)


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


# Jobs a unit of work queued, announced to this process's dispatchers once it commits.
QUEUED_KEY = "benchgen_queued_jobs"
Dispatcher = Callable[[str, str], None]
_dispatchers: list[Dispatcher] = []
log = logging.getLogger(__name__)


def add_dispatcher(dispatch: Dispatcher) -> None:
    """Tell `dispatch(job_id, kind)` of every job this process queues, once its commit is
    done (a broker's publisher); the database stays the truth, so a lost message only delays
    the job until a sweeper sends it again."""
    _dispatchers.append(dispatch)


def remove_dispatcher(dispatch: Dispatcher) -> None:
    """Stop telling `dispatch` (composition undoes what it set up)."""
    if dispatch in _dispatchers:
        _dispatchers.remove(dispatch)


def jobs_committed(session: Session) -> None:
    """After-commit hook: announce the jobs the unit of work queued."""
    queued = session.info.pop(QUEUED_KEY, [])
    for job_id, kind in queued:
        for dispatch in list(_dispatchers):
            try:
                dispatch(job_id, kind)
            except Exception as exc:  # the request succeeded; the sweeper sends it later
                log.warning("could not dispatch job %s: %s", job_id, type(exc).__name__)


def user_slots(settings: Settings) -> int:
    """Runs one user may have executing at once (training jobs are not counted):
    BENCHGEN_USER_RUN_SLOTS, else half of this deployment's worker threads
    (BENCHGEN_WORKER_THREADS), at least one."""
    return settings.user_run_slots or max(1, settings.worker_threads // 2)


def claim(
    ctx: Context,
    worker: str,
    lease: timedelta,
    kinds: frozenset[str] | None = None,
    job_id: str | None = None,
) -> Claimed | None:
    """Take a due job of a kind this principal is granted (or one whose lease expired), serving
    users in turn: the user with the fewest executing runs first, then the oldest job; a user
    who already holds `user_slots` executing runs waits, so one user cannot starve the rest
    (training jobs take no slot: the compute pools limit them).
    `kinds` narrows the kinds (a worker's queues). `job_id` is the job a broker's message names:
    the message is a turn in that job's queue, which the job takes unless a user with fewer
    executing runs waits there too (`_in_turn`).

    PostgreSQL: `FOR UPDATE SKIP LOCKED`, so workers never wait on each other's rows. SQLite:
    the write transaction holds the database lock from its first statement.
    """
    now, slots = ctx.now(), user_slots(ctx.settings)
    candidates = _in_turn(ctx, now, slots, kinds, job_id)
    if candidates is None:
        return None
    job = ctx.session.scalar(candidates.limit(1).with_for_update(skip_locked=True, of=Job))
    if job is None:
        return None
    exhausted = job.status == JobStatus.RUNNING and job.attempts >= job.max_attempts
    takes_slot = job.kind in SLOT_KINDS and not exhausted
    if takes_slot and not _slot_still_free(ctx, job.user_id, slots, now):
        return None
    dead = (job.lease_owner or "") if job.status == JobStatus.RUNNING else ""
    job.status, job.lease_owner, job.updated_at = JobStatus.RUNNING, worker, now
    job.lease_expires_at = now + lease
    if not exhausted:
        job.attempts += 1
    return Claimed(job.id, job.kind, dict(job.payload), job.attempts, exhausted, worker, dead)


def _in_turn(
    ctx: Context, now: datetime, slots: int, kinds: frozenset[str] | None, job_id: str | None
) -> Select[Job] | None:
    """The jobs `claim` may take, in the order it takes them; None when there is none to look
    for (`job_id` names no job, or one waiting for its user's slot).

    A message's job goes first among the jobs of users as busy as its own, not alone: the
    broker hands messages out in the order they were sent, and when each message claimed only
    its own job, every thread one user's runs freed took her next message, so another user's
    run sent after her 200 waited for all of them. The job passed over is taken by a later
    message (each job sends one, and each job that ends its user's next).
    """
    named: list[ColumnElement[int]] = []
    if job_id is not None:
        job = ctx.session.execute(
            select(Job.kind, Job.user_id, _waiting(now).label("waiting")).where(Job.id == job_id)
        ).first()
        if job is None or job.kind not in QUEUE_OF:
            return None
        capped = job.waiting and job.kind in SLOT_KINDS
        if capped and _executing_count(ctx, job.user_id, now) >= slots:
            # The job that frees the slot sends it (`next_for_user`). Looked for among every due
            # job instead, each message of a flood cost a scan of the whole queue.
            return None
        served = QUEUES[QUEUE_OF[job.kind]]  # the message's queue: a turn there, not elsewhere
        kinds = served if kinds is None else kinds & served
        named.append(case((Job.id == job_id, 0), else_=1))
    executing, busy = _executing_per_user(now)
    return (
        select(Job)
        .outerjoin(executing, executing.c.user_id == Job.user_id)
        .where(Job.kind.in_(_allowed_kinds(ctx, kinds)), _due(now), _within_slots(busy, slots))
        .order_by(busy, *named, Job.run_after, Job.id)
    )


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


def holds(ctx: Context, job_id: str, worker: str) -> bool:
    """Whether `worker` still holds the job (its lease was not taken over). The job's row stays
    locked until the transaction ends, so no other worker can take the job over before what
    this transaction writes has committed: a worker checks this where it records its work."""
    return _held(ctx, job_id, worker) is not None


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


def _due(now: datetime) -> ColumnElement[bool]:
    """Queued and due, or held by a worker whose lease ran out (it died)."""
    return or_(
        and_(Job.status == JobStatus.QUEUED, Job.run_after <= now),
        and_(Job.status == JobStatus.RUNNING, Job.lease_expires_at < now),
    )


def waiting_kind(ctx: Context, job_id: str) -> str | None:
    """The job's kind while it is due, unheld (queued, or held by a dead worker) and its user
    has a slot free, else None: a message that found it unclaimable only for a moment (another
    worker held its row) must come back.

    A job waiting for its user's slot is not sent again from here: each such message came back
    every second while the sweeper added more each sweep, a storm of claims that grew for as
    long as the backlog waited. The job that frees the slot sends it (`next_for_user`), and the
    sweeper catches any message lost on the way.
    """
    now = ctx.now()
    row = ctx.session.execute(
        select(Job.kind, Job.user_id).where(Job.id == job_id, _due(now))
    ).first()
    if row is None:
        return None
    if row.kind in SLOT_KINDS and _executing_count(ctx, row.user_id, now) >= user_slots(
        ctx.settings
    ):
        return None
    return str(row.kind)


def next_for_user(ctx: Context, job_id: str) -> tuple[str, str] | None:
    """(id, kind) of the oldest due job that nobody holds of the user `job_id` worked for: sent
    when that job ends, if it freed one of the user's slots."""
    ended = ctx.session.execute(select(Job.user_id, Job.kind).where(Job.id == job_id)).first()
    if ended is None or ended.user_id is None or ended.kind not in SLOT_KINDS:
        return None
    row = ctx.session.execute(
        select(Job.id, Job.kind)
        .where(
            Job.user_id == ended.user_id,
            Job.id != job_id,
            Job.kind.in_(SLOT_KINDS),
            _due(ctx.now()),
        )
        .order_by(Job.run_after, Job.id)
        .limit(1)
    ).first()
    return (str(row.id), str(row.kind)) if row is not None else None


def overdue_jobs(
    ctx: Context, waited: timedelta, kinds: frozenset[str] | None = None, limit: int = 500
) -> list[tuple[str, str]]:
    """(id, kind) of jobs of `kinds` (None: every kind) due for longer than `waited` that no
    worker holds and their user's slots let start: their broker message was lost (a broker
    restart) or their worker died. The sweeper sends them again; claiming is what decides, so a
    job sent twice still runs once.

    Jobs waiting for their user's slot are left out, like `waiting_kind` does: the job that
    frees the slot sends the next. Counted in, one user's backlog filled every sweep's `limit`,
    oldest first, and a lost message of anyone else's was never sent again while it lasted;
    the kinds are filtered here for the same reason (a training worker's sweep was all runs).
    """
    now = ctx.now()
    late = or_(
        and_(Job.status == JobStatus.QUEUED, Job.run_after <= now - waited),
        and_(Job.status == JobStatus.RUNNING, Job.lease_expires_at < now - waited),
    )
    executing, busy = _executing_per_user(now)
    rows = ctx.session.execute(
        select(Job.id, Job.kind)
        .outerjoin(executing, executing.c.user_id == Job.user_id)
        .where(
            Job.kind.in_(_allowed_kinds(ctx, kinds)),
            late,
            _within_slots(busy, user_slots(ctx.settings)),
        )
        .order_by(Job.run_after, Job.id)
        .limit(limit)
    )
    return [(job_id, kind) for job_id, kind in rows]


def postpone(ctx: Context, job_id: str, worker: str, seconds: float) -> None:
    """Put a held job back in the queue for later without spending an attempt (a no-op when
    the lease was lost). Due again at once (`seconds` 0, a stopping worker's), it keeps its
    place: stamped with the moment it came back, a half-done run went behind every run its user
    had queued after it, and stayed "running", untouched, until they had all run."""
    job = _held(ctx, job_id, worker)
    if job is None:
        return
    job.status = JobStatus.QUEUED
    if seconds:
        job.run_after = ctx.now() + timedelta(seconds=seconds)
    job.attempts = max(job.attempts - 1, 0)
    job.lease_owner = job.lease_expires_at = None
    job.updated_at = ctx.now()


def _holding_a_slot(now: datetime, jobs: Any = Job) -> ColumnElement[bool]:
    """A run held by a live worker: an expired lease is a crashed worker's, free to be taken
    over, and training takes no slot."""
    return and_(
        jobs.kind.in_(SLOT_KINDS), jobs.status == JobStatus.RUNNING, jobs.lease_expires_at >= now
    )


def _executing_per_user(now: datetime) -> tuple[Subquery, ColumnElement[int]]:
    """How many slots each user has taken, as a derived table to outer-join on `Job.user_id`,
    and the count it gives the joined job's user (0 when none).

    Counted once per user, not once per due job: a correlated count ran over the user's jobs
    for every due job, so one user's thousands of queued runs made each claim (four a second
    per idle polling worker) and each sweep take seconds on PostgreSQL.
    """
    other = aliased(Job)
    executing = (
        select(other.user_id, func.count().label("executing"))
        .where(_holding_a_slot(now, other))
        .group_by(other.user_id)
        .subquery("executing")
    )
    return executing, func.coalesce(executing.c.executing, 0)


def _allowed_kinds(ctx: Context, kinds: frozenset[str] | None) -> list[str]:
    """The job kinds among `kinds` (None: every kind) the principal is granted to work on."""
    granted = [kind for kind, action in JOB_ACTIONS.items() if access.can(ctx, action)]
    return [kind for kind in granted if kinds is None or kind in kinds]


def _within_slots(busy: ColumnElement[int], slots: int) -> ColumnElement[bool]:
    """A job its user's slots let start now (`busy`: `_executing_per_user`): no user's,
    not a run, out of attempts (only its failure is recorded), or its user has a slot free."""
    return or_(Job.user_id.is_(None), Job.kind.not_in(SLOT_KINDS), _exhausted(), busy < slots)


def _waiting(now: datetime) -> ColumnElement[bool]:
    """Due, and with attempts left: to run when its user's slots let it (`_exhausted` aside)."""
    return and_(_due(now), Job.attempts < Job.max_attempts)


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
    return _executing_count(ctx, user_id, now) < slots


def _executing_count(ctx: Context, user_id: str | None, now: datetime) -> int:
    """How many of `user_id`'s slots are taken (none for jobs of no user: they take none)."""
    if user_id is None:
        return 0
    executing = ctx.session.scalar(
        select(func.count()).select_from(Job).where(Job.user_id == user_id, _holding_a_slot(now))
    )
    return int(executing or 0)


def _held(ctx: Context, job_id: str, worker: str) -> Job | None:
    """The job if `worker` holds it, its row locked (PostgreSQL; SQLite's write transaction
    holds the database) until the transaction ends; the principal must hold the grant for its
    kind."""
    # Locked: a claim by another worker (`FOR UPDATE SKIP LOCKED`) passes the row over until
    # this transaction ends, so a lease read here as held stays held until what the caller
    # writes has committed.
    job = ctx.session.get(Job, job_id, with_for_update=True, populate_existing=True)
    if job is None:
        return None
    access.require(ctx, JOB_ACTIONS[job.kind])
    return job if job.status == JobStatus.RUNNING and job.lease_owner == worker else None
