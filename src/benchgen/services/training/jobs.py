"""Training jobs as their owner sees them: launch a checked plan (credits reserved), list, read
with the live log and loss curve, cancel."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func, select

from benchgen.core.context import Context
from benchgen.core.errors import Conflict, PermissionDenied
from benchgen.core.ids import new_id
from benchgen.core.permissions import Action
from benchgen.core.statuses import TRAINING_FINAL, TrainingStatus
from benchgen.db.tables import Dataset, Model, TrainingEvent, TrainingJob
from benchgen.services import _enqueue, access, audit
from benchgen.services.accounts import _ledger
from benchgen.services.keysets import Newest, newest_first
from benchgen.services.specs import MAX_LIST, check_window
from benchgen.services.training import plans
from benchgen.services.training._job_rows import close_job, own_job, owned_job
from benchgen.services.training.plans import TrainingIn

# A worker killed mid-training is replaced this many times, each resuming from the newest
# checkpoint, before the job fails and is refunded.
MAX_ATTEMPTS = 3
MAX_LOG_PAGE = 5000  # log lines one read returns at most


@dataclass(frozen=True)
class TrainingJobView:
    """A training job as its owner sees it. `credits_charged` is settled when it ends;
    `trained_model_id` (and `trained_model_name`) is None until it completes, and again once
    that model is deleted."""

    id: str
    name: str
    status: TrainingStatus
    waiting_for: str
    job_type: str
    base_model_id: str
    base_model_name: str
    dataset_id: str
    dataset_name: str
    hyperparameters: dict[str, Any]
    compute_pool: str
    compute_count: int
    total_steps: int
    steps_done: int
    checkpoint_step: int
    last_loss: float | None
    estimated_credits: int
    credits_charged: int
    trained_model_id: str | None
    trained_model_name: str | None  # its name now (renamed since, it is not the job's)
    cancel_requested: bool
    peak_memory_mib: int
    error: str
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None


@dataclass(frozen=True)
class TrainingLogLine:
    """One line of a job's live log; a step's line carries its metrics too."""

    id: int
    at: datetime
    line: str
    step: int | None
    loss: float | None
    learning_rate: float | None
    tokens_per_s: float | None


def start_training(ctx: Context, data: TrainingIn | dict[str, Any]) -> TrainingJobView:
    """Launch a training job from a plan checked again now; its credits are reserved.

    Raises:
        PermissionDenied: a token or turn without the train scope.
        NotFound: the model or dataset is not one the user may use.
        InvalidInput: see `plans.plan_training`.
        InsufficientCredits: the balance cannot cover the estimate; nothing is written.
    """
    planned = plans.check_plan(ctx, data)
    plan = planned.plan
    training_id = new_id("tr")
    reservation = _ledger.reserve_credits(ctx, plan.estimated_credits, f"training:{training_id}")
    row = TrainingJob(
        id=training_id,
        owner_id=_ledger.acting_user_id(ctx),
        name=plan.name,
        job_type=plan.job_type,
        base_model_id=plan.base_model_id,
        dataset_id=plan.dataset_id,
        dataset_sha256=planned.dataset.sha256,
        hyperparameters=planned.spec.hyperparameters.model_dump(),
        compute_pool=planned.pool,
        compute_count=plan.compute.count,
        status=TrainingStatus.QUEUED,
        waiting_for="" if plan.compute.starts_now else plan.compute.availability,
        total_steps=plan.total_steps,
        estimated_credits=plan.estimated_credits,
        price_per_step=plan.price_per_step,
        reservation_id=reservation,
        created_at=ctx.now(),
    )
    ctx.session.add(row)
    ctx.session.flush()  # the log line below refers to the row, which no relationship orders
    row.job_id = _enqueue.enqueue(
        ctx, "training", {"training_job_id": training_id}, max_attempts=MAX_ATTEMPTS
    )
    ctx.session.add(TrainingEvent(job_id=row.id, at=ctx.now(), line=_queued_line(plan)))
    audit.record(
        ctx,
        audit.AuditAction.TRAINING_START,
        "training_job",
        row.id,
        base_model_id=row.base_model_id,
        dataset_id=row.dataset_id,
        credits=plan.estimated_credits,
    )
    ctx.session.flush()
    return view(ctx, row)


def _queued_line(plan: plans.TrainingPlan) -> str:
    return (
        f"Queued: {plan.job_type} of {plan.base_model_name} on {plan.dataset_name}, "
        f"{plan.total_steps} steps, {plan.estimated_credits} credits reserved"
    )


def list_training_jobs(
    ctx: Context, limit: int = 50, after: Newest | None = None
) -> list[TrainingJobView]:
    """The acting user's training jobs, newest first; after the one keyed `after` when given.

    Raises:
        PermissionDenied: the principal may not read training.
        InvalidInput: limit outside 1..MAX_LIST.
    """
    access.require(ctx, Action.TRAINING_READ)
    check_window(limit, 0, MAX_LIST)
    query = newest_first(
        select(TrainingJob).where(
            TrainingJob.owner_id == ctx.principal.user_id, TrainingJob.deleted_at.is_(None)
        ),
        TrainingJob.created_at,
        TrainingJob.id,
        after,
    )
    return views(ctx, ctx.session.scalars(query.limit(limit)).all())


def get_training_job(ctx: Context, training_id: str) -> TrainingJobView:
    """One of the user's training jobs.

    Raises:
        PermissionDenied: the principal may not read training.
        NotFound: missing or someone else's (never revealed).
    """
    access.require(ctx, Action.TRAINING_READ)
    return view(ctx, own_job(ctx, training_id))


def read_training_log(
    ctx: Context, training_id: str, after: int = 0, limit: int = 1000
) -> list[TrainingLogLine]:
    """The job's log lines after the id `after` (for following a live job and its loss).

    Raises:
        PermissionDenied: the principal may not read training.
        NotFound: missing or someone else's.
    """
    access.require(ctx, Action.TRAINING_READ)
    own_job(ctx, training_id)
    rows = ctx.session.scalars(
        select(TrainingEvent)
        .where(TrainingEvent.job_id == training_id, TrainingEvent.id > after)
        .order_by(TrainingEvent.id)
        .limit(min(max(limit, 1), MAX_LOG_PAGE))
    )
    return [
        TrainingLogLine(r.id, r.at, r.line, r.step, r.loss, r.learning_rate, r.tokens_per_s)
        for r in rows
    ]


def cancel_training_job(ctx: Context, training_id: str) -> TrainingJobView:
    """Cancel a job: a queued one at once (nothing charged), a running one between two steps
    (charged for the steps that ran).

    Raises:
        PermissionDenied: a token or turn without the train scope.
        NotFound: missing or someone else's.
        Conflict: it has already ended.
    """
    access.require(ctx, Action.TRAINING_CANCEL)
    row = own_job(ctx, training_id)
    # Read again under the row lock a starting worker takes (`execution.begin_training`): a job
    # it started in between is running, not queued, and must not be refunded.
    ctx.session.refresh(row, with_for_update=True)
    if row.status in TRAINING_FINAL:
        ended = "been cancelled" if row.status == TrainingStatus.CANCELLED else row.status
        raise Conflict(f"This training job has already {ended}.", {"id": row.id})
    if row.cancel_requested_at is not None:
        return view(ctx, row)  # asked already: it stops after its current step, once
    row.cancel_requested_at = ctx.now()
    if row.status == TrainingStatus.QUEUED and row.steps_done == 0:
        if row.job_id:
            _enqueue.cancel_queued(ctx, row.job_id)
        close_job(ctx, row, TrainingStatus.CANCELLED, "Cancelled before it started")
    else:
        ctx.session.add(
            TrainingEvent(
                job_id=row.id, at=ctx.now(), line="Cancel requested: stopping after this step"
            )
        )
    audit.record(ctx, audit.AuditAction.TRAINING_CANCEL, "training_job", row.id)
    ctx.session.flush()
    return view(ctx, row)


def delete_training_job(ctx: Context, training_id: str) -> None:
    """Remove an ended job from the user's list (web app or CLI only); a Trained model it
    made stays in the catalogue until deleted itself.

    Raises:
        PermissionDenied: a token or the agent asked (the refusal names the job's page).
        NotFound: missing or someone else's.
        Conflict: the job is still queued or running: cancel it first.
    """
    try:
        access.require(ctx, Action.TRAINING_DELETE)
    except PermissionDenied as exc:
        if exc.details.get("page") and owned_job(ctx, training_id) is not None:
            exc.details["page"] = f"/training/{training_id}"
        raise
    row = own_job(ctx, training_id)
    if row.status not in TRAINING_FINAL:
        raise Conflict("Cancel this training job before deleting it.", {"id": row.id})
    row.deleted_at = ctx.now()
    audit.record(ctx, audit.AuditAction.TRAINING_DELETE, "training_job", row.id)


def view(ctx: Context, row: TrainingJob) -> TrainingJobView:
    """The owner's view of a job row."""
    return views(ctx, [row])[0]


def views(ctx: Context, rows: Sequence[TrainingJob]) -> list[TrainingJobView]:
    """Views of many rows in a constant number of queries (names and last losses batched)."""
    ids = [row.id for row in rows]
    made = {r.trained_model_id for r in rows if r.trained_model_id}
    found = ctx.session.execute(
        select(Model.id, Model.name, Model.deleted_at).where(
            Model.id.in_({r.base_model_id for r in rows} | made)
        )
    ).all()
    names = {model_id: name for model_id, name, _ in found}
    # A deleted Trained model is not named: pages and the agent would point at a 404.
    live = {model_id for model_id, _, deleted in found if deleted is None and model_id in made}
    # A deleted dataset has no name here: pages then show its id, not a link to a 404.
    datasets: dict[str, str] = dict(
        ctx.session.execute(
            select(Dataset.id, Dataset.name).where(
                Dataset.id.in_({r.dataset_id for r in rows}), Dataset.deleted_at.is_(None)
            )
        ).all()
    )
    newest = (
        select(func.max(TrainingEvent.id))
        .where(TrainingEvent.job_id.in_(ids), TrainingEvent.loss.is_not(None))
        .group_by(TrainingEvent.job_id)
    )
    losses: dict[str, float | None] = dict(
        ctx.session.execute(
            select(TrainingEvent.job_id, TrainingEvent.loss).where(TrainingEvent.id.in_(newest))
        ).all()
    )
    return [_view(row, names, datasets, losses, live) for row in rows]


def _view(
    row: TrainingJob,
    names: dict[str, str],
    datasets: dict[str, str],
    losses: dict[str, float | None],
    live: set[str],
) -> TrainingJobView:
    return TrainingJobView(
        id=row.id,
        name=row.name,
        status=TrainingStatus(row.status),
        waiting_for=row.waiting_for,
        job_type=row.job_type,
        base_model_id=row.base_model_id,
        base_model_name=names.get(row.base_model_id, ""),
        dataset_id=row.dataset_id,
        dataset_name=datasets.get(row.dataset_id, ""),
        hyperparameters=dict(row.hyperparameters),
        compute_pool=row.compute_pool,
        compute_count=row.compute_count,
        total_steps=row.total_steps,
        steps_done=row.steps_done,
        checkpoint_step=row.checkpoint_step,
        last_loss=losses.get(row.id),
        estimated_credits=row.estimated_credits,
        credits_charged=row.credits_charged,
        trained_model_id=row.trained_model_id if row.trained_model_id in live else None,
        trained_model_name=names[row.trained_model_id] if row.trained_model_id in live else None,
        cancel_requested=row.cancel_requested_at is not None,
        peak_memory_mib=row.peak_rss_bytes // 2**20,
        error=row.error,
        created_at=row.created_at,
        started_at=row.started_at,
        finished_at=row.finished_at,
    )
