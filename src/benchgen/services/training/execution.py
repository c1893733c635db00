"""Executing a training job for the worker: claim its compute, prepare its files, record the
live log and checkpoints, and close it with a Trained model and settled credits."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import func, select

from benchgen.core.context import Context
from benchgen.core.ids import new_id
from benchgen.core.permissions import Action
from benchgen.core.statuses import TRAINING_FINAL, ModelStatus, TrainingStatus
from benchgen.core.text import plural
from benchgen.db.locks import lock_named
from benchgen.db.tables import Dataset, Model, TrainingEvent, TrainingJob
from benchgen.services import _model_specs, access, audit
from benchgen.services._artifacts import store_for
from benchgen.services.training import compute
from benchgen.services.training._job_rows import close_job
from benchgen.services.training.devices import Hold
from benchgen.training.process import Outcome
from benchgen.training.spec import Hyperparameters, TrainSpec

WAIT_FOR_COMPUTE_S = 5.0
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Work:
    """What the worker runs: the engine's spec, with files prepared in its folder."""

    training_id: str
    spec: TrainSpec
    memory_limit_bytes: int | None
    timeout_s: float


@dataclass(frozen=True)
class Wait:
    """The job's compute is busy: try again later (the job says what it waits for)."""

    seconds: float


def begin_training(
    ctx: Context, training_id: str, folder: Path, gpus: Hold | None = None
) -> Work | Wait | None:
    """Take the job's compute and prepare its files in `folder`; None when there is nothing to
    do (it ended, or was cancelled while queued). A GPU job takes its GPUs on this worker into
    `gpus`, the attempt's hold (`devices.LOCAL.attempt()`), which gives them back when the
    attempt ends; it waits when this worker has too few free GPUs of its type.

    A job already running was interrupted (its worker died): it resumes from its newest
    checkpoint, keeping the compute it held.

    Raises:
        ValueError: a GPU job without a hold to take its GPUs into.
    """
    access.require(ctx, Action.TRAINING_EXECUTE)
    # Locked: a cancel of the queued job in between (`jobs.cancel_training_job` takes the same
    # lock) refunded it in full while it trained, and then it could never close.
    row = ctx.session.get(TrainingJob, training_id, with_for_update=True, populate_existing=True)
    if row is None or row.status in TRAINING_FINAL:
        return None
    if row.cancel_requested_at is not None:
        # A job whose worker was lost mid-training ran steps, and pays for them.
        if row.status == TrainingStatus.QUEUED:
            line = "Cancelled before it started"
        else:
            line = f"Cancelled after {row.steps_done} steps"
        close_job(ctx, row, TrainingStatus.CANCELLED, line)
        return None
    gone = _missing_input(ctx, row)
    if gone:
        row.error = gone
        close_job(ctx, row, TrainingStatus.FAILED, f"Failed: {gone}")
        return None
    if row.status == TrainingStatus.QUEUED:
        busy = _busy_reason(ctx, row)
        if busy:
            row.waiting_for = busy
            return Wait(WAIT_FOR_COMPUTE_S)
    visible = _place(ctx, row, gpus)
    if visible is None:
        return Wait(WAIT_FOR_COMPUTE_S)
    row.waiting_for = ""
    if row.status == TrainingStatus.QUEUED:
        row.status, row.started_at = TrainingStatus.RUNNING, ctx.now()
        _log(ctx, row.id, f"Started on {row.compute_pool}: {row.total_steps} steps")
    else:
        _log(ctx, row.id, f"Resumed from step {row.checkpoint_step} after an interruption")
        row.steps_done = row.checkpoint_step
    spec = _spec(ctx, row, folder, visible)
    return Work(row.id, spec, _memory_limit(ctx, row), _timeout(ctx))


def _missing_input(ctx: Context, row: TrainingJob) -> str:
    """Why the job cannot train any more (its base model was withdrawn, or its dataset's data
    changed), or ""; such a job fails and is refunded."""
    base = ctx.session.get(Model, row.base_model_id)
    dataset = ctx.session.get(Dataset, row.dataset_id)
    if base is None or base.deleted_at is not None:
        return "its base model was removed from the catalogue"
    if dataset is None or dataset.deleted_at is not None or dataset.sha256 != row.dataset_sha256:
        return "its dataset is gone"
    return ""


def _busy_reason(ctx: Context, row: TrainingJob) -> str:
    """Why the job's pool cannot take it now, or "" when it can."""
    _lock_pool(ctx, row.compute_pool)
    total = compute.offered(ctx.settings).get(row.compute_pool, 0)
    held = ctx.session.scalar(
        select(func.coalesce(func.sum(TrainingJob.compute_count), 0)).where(
            TrainingJob.compute_pool == row.compute_pool,
            TrainingJob.status == TrainingStatus.RUNNING,
        )
    )
    if int(held or 0) + row.compute_count <= total:
        return ""
    return f"waiting for {row.compute_pool}: {held} of {total} in use by other training jobs"


def _place(ctx: Context, row: TrainingJob, gpus: Hold | None) -> tuple[str, ...] | None:
    """The GPUs of this worker the job trains on, held by the attempt (none for the CPU pool),
    or None when this worker lacks that many free GPUs of the job's type.

    The pools are counted over the whole deployment, but a job trains on the GPUs of the
    worker that holds it: one that cannot place it here leaves it in the queue, its attempts
    kept and nothing charged, for a worker that can (this one, once its GPUs come free, or one
    on another machine). Failing it instead would refuse a job the deployment can run.
    """
    if row.compute_pool == compute.CPU:
        return ()
    if gpus is None:
        raise ValueError(f"training job {row.id} needs GPUs and no hold to take them into")
    gpu_type = row.compute_pool.removeprefix("gpu:")
    visible = gpus.take(gpu_type, row.compute_count)
    if visible is None:
        free = gpus.local.free_of(gpu_type)
        reason = (
            f"waiting for a worker with {row.compute_count} free {gpu_type} GPU(s): "
            f"the last to look had {free}"
        )
        if row.waiting_for != reason:  # once, not at every look
            _log(ctx, row.id, f"Not placed: {reason}")
            log.warning(
                "training job %s: %s (its GPUs: %s)", row.id, reason, gpus.local.described()
            )
        row.waiting_for = reason
    return visible


def _lock_pool(ctx: Context, pool: str) -> None:
    """Serialise claims of one pool. SQLite's write transaction already holds the database
    lock; PostgreSQL takes a transaction-scoped advisory lock named by the pool."""
    lock_named(ctx.session, f"benchgen-compute:{pool}")


def _spec(ctx: Context, row: TrainingJob, folder: Path, gpus: tuple[str, ...]) -> TrainSpec:
    store = store_for(ctx.settings)
    folder.mkdir(parents=True, exist_ok=True)
    dataset = ctx.session.get(Dataset, row.dataset_id)
    base = ctx.session.get(Model, row.base_model_id)
    assert dataset is not None and base is not None  # foreign keys; rows are soft-deleted
    data = store.copy_to(dataset.storage_key, folder / "data.jsonl")
    resume = None
    if row.checkpoint_key:
        try:
            resume = str(store.copy_folder_to(row.checkpoint_key, folder / "resume"))
        except FileNotFoundError:
            # The checkpoint cannot be read whole: train from the start (charged once, by the
            # steps the job ends with).
            row.checkpoint_key, row.checkpoint_step, row.steps_done = None, 0, 0
            _log(ctx, row.id, "The last checkpoint is unreadable: starting again from step 0")
    hyper = dict(row.hyperparameters)
    hyper["target_modules"] = tuple(hyper["target_modules"])
    return TrainSpec(
        job_type="sft" if row.job_type == "sft" else "lora",
        base=_model_specs.base_weights(base, ctx.settings),
        dataset_path=str(data),
        hyper=Hyperparameters(**hyper),
        output_dir=str(folder / "out"),
        device="cpu" if row.compute_pool == compute.CPU else "cuda",
        gpus=gpus,
        threads=ctx.settings.training_threads,
        checkpoint_every=ctx.settings.training_checkpoint_every,
        resume_dir=resume,
    )


def _memory_limit(ctx: Context, row: TrainingJob) -> int | None:
    # CUDA drivers map far more address space than they use: the limit is for the CPU pool.
    return ctx.settings.training_memory_mib * 2**20 if row.compute_pool == compute.CPU else None


def _timeout(ctx: Context) -> float:
    return ctx.settings.training_max_hours * 3600


def record_events(ctx: Context, training_id: str, events: list[dict[str, Any]]) -> None:
    """Write a batch of the engine's events into the job's live log; a checkpoint is copied
    to artifact storage and becomes the point an interrupted job resumes from."""
    access.require(ctx, Action.TRAINING_EXECUTE)
    row = ctx.session.get(TrainingJob, training_id)
    if row is None:
        return
    for event in events:
        _record(ctx, row, event)


def _record(ctx: Context, row: TrainingJob, event: dict[str, Any]) -> None:
    kind = event.get("event")
    if kind == "step":
        step = int(event["step"])
        row.steps_done = max(row.steps_done, step)
        ctx.session.add(
            TrainingEvent(
                job_id=row.id,
                at=ctx.now(),
                line=_step_line(event, row.total_steps),
                step=step,
                loss=_number(event.get("loss")),
                learning_rate=_number(event.get("learning_rate")),
                tokens_per_s=_number(event.get("tokens_per_s")),
            )
        )
    elif kind == "checkpoint":
        _keep_checkpoint(ctx, row, int(event["step"]), Path(str(event["dir"])))
    elif kind == "started":
        _log(ctx, row.id, _started_line(event))
        _skip_rows(ctx, row, event)


def _skip_rows(ctx: Context, row: TrainingJob, event: dict[str, Any]) -> None:
    """Rows whose answer lies wholly past max_seq_length teach nothing and are skipped: the
    log says how many, even when the steps stay as many, and the job is charged for the
    steps it really has."""
    skipped, steps = event.get("skipped_rows"), event.get("total_steps")
    if not (isinstance(skipped, int) and skipped > 0 and isinstance(steps, int)):
        return
    _log(ctx, row.id, f"{plural(skipped, 'row')} skipped past max_seq_length: {steps} steps")
    if 0 < steps < row.total_steps:
        row.total_steps = steps


def _keep_checkpoint(ctx: Context, row: TrainingJob, step: int, folder: Path) -> None:
    """Store a checkpoint under its own step's key, then drop the one before: a worker that
    dies while storing it leaves the earlier checkpoint whole to resume from."""
    store = store_for(ctx.settings)
    key = f"training/{row.id}/checkpoint-{step:07d}"
    store.put_folder(key, folder)
    earlier = row.checkpoint_key
    row.checkpoint_key, row.checkpoint_step = key, step
    if earlier and earlier != key:
        store.delete_prefix(earlier)
    _log(ctx, row.id, f"Checkpoint saved at step {step}")


def _step_line(event: dict[str, Any], total: int) -> str:
    loss, rate = _number(event.get("loss")), _number(event.get("learning_rate"))
    speed = _number(event.get("tokens_per_s")) or 0.0
    return (
        f"step {event['step']}/{total} loss {loss if loss is None else round(loss, 4)} "
        f"lr {rate if rate is None else f'{rate:.2e}'} {speed:.0f} tokens/s"
    )


def _started_line(event: dict[str, Any]) -> str:
    return (
        f"Training on {event.get('device', 'cpu')}: {event.get('trainable_params', '?')} "
        f"trainable parameters, from step {event.get('start_step', 0)}"
    )


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if number == number and abs(number) != float("inf") else None


def is_cancel_requested(ctx: Context, training_id: str) -> bool:
    """True once the owner asked to cancel (the engine stops between steps)."""
    access.require(ctx, Action.TRAINING_EXECUTE)
    row = ctx.session.get(TrainingJob, training_id)
    return row is None or row.cancel_requested_at is not None


def finish_training(ctx: Context, training_id: str, outcome: Outcome) -> None:
    """Close the job as the engine ended it: a completed one joins the catalogue as a Trained
    model; credits are settled for the steps that ran (refunded in full when it failed). One
    stopped at the deployment's time cap ends cancelled, with the cap as its error."""
    access.require(ctx, Action.TRAINING_EXECUTE)
    row = ctx.session.get(TrainingJob, training_id)
    if row is None or row.status in TRAINING_FINAL:
        return
    row.peak_rss_bytes = max(row.peak_rss_bytes, outcome.peak_rss_bytes)
    if outcome.status == "completed" and outcome.final_dir:
        row.steps_done = row.total_steps
        store_for(ctx.settings).put_folder(
            _model_specs.trained_key(row.id), Path(outcome.final_dir)
        )
        row.trained_model_id = _add_trained_model(ctx, row)
        close_job(ctx, row, TrainingStatus.COMPLETED, f"Completed: {row.total_steps} steps")
    elif outcome.status in ("cancelled", "timed_out"):
        # The time cap is no fault of the platform: the steps ran as asked, only the plan's
        # estimate fell short, so they are charged as a cancel's are.
        row.steps_done = max(row.steps_done, outcome.steps_done)
        row.error = outcome.error[:2000]
        line = f"Cancelled: {row.error}" if row.error else f"Cancelled after {row.steps_done} steps"
        close_job(ctx, row, TrainingStatus.CANCELLED, line)
    else:
        row.error = outcome.error[:2000] or "training failed"
        close_job(ctx, row, TrainingStatus.FAILED, f"Failed: {row.error}")
    audit.record(
        ctx,
        audit.AuditAction.TRAINING_FINISH,
        "training_job",
        row.id,
        status=row.status,
        steps=row.steps_done,
        credits=row.credits_charged,
    )


def abandon_training(ctx: Context, training_id: str, error: str) -> None:
    """The job could not be run (its workers kept dying): fail it and refund it in full."""
    access.require(ctx, Action.TRAINING_EXECUTE)
    row = ctx.session.get(TrainingJob, training_id)
    if row is None or row.status in TRAINING_FINAL:
        return
    row.error = error[:2000]
    close_job(ctx, row, TrainingStatus.FAILED, f"Failed: {row.error}")
    audit.record(ctx, audit.AuditAction.TRAINING_FINISH, "training_job", row.id, status=row.status)


def _add_trained_model(ctx: Context, row: TrainingJob) -> str:
    now = ctx.now()
    model = Model(
        id=new_id("mdl"),
        owner_id=row.owner_id,
        name=row.name,
        kind="local_hf",
        endpoint_model=f"trained:{row.id}",
        base_url=None,
        api_key_enc=None,
        # Multiple choice by the letters' log-probabilities: a small trained model answers
        # more reliably so than in words.
        params={"letter_logprobs": True},
        price_per_question=0,
        price_per_1k_tokens=0,
        status=ModelStatus.AVAILABLE,
        training_job_id=row.id,
        created_at=now,
        updated_at=now,
    )
    ctx.session.add(model)
    ctx.session.flush()
    return model.id


def _log(ctx: Context, training_id: str, line: str) -> None:
    ctx.session.add(TrainingEvent(job_id=training_id, at=ctx.now(), line=line[:2000]))
