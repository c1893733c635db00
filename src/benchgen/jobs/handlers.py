"""Job handlers, by kind (an explicit dict): each turns one claimed job into service calls."""

from __future__ import annotations

import asyncio
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

from benchgen.core.context import Context, Principal
from benchgen.core.permissions import Action
from benchgen.evals.adapters import build_adapter
from benchgen.evals.engine import EngineReport, run_items
from benchgen.evals.types import Answer, Item, ModelSpec
from benchgen.services import queue
from benchgen.services.queue import Claimed
from benchgen.services.runs import execution, notifications, rejudging
from benchgen.services.runs.execution import JudgingPlan, RunPlan
from benchgen.services.runtime import Runtime, transaction

# Custom benchmarks' programs (bundles, Markdown, YAML) and training are imported by their own
# handlers when a job of theirs comes: a model run, the common job, starts without them.

T = TypeVar("T")
WORKER = Principal.system("worker", frozenset({Action.RUN_EXECUTE, Action.TRAINING_EXECUTE}))
CANCEL_CHECK_S = 0.5
# A training job's step lines are written at most this often (a checkpoint at once).
TRAINING_LOG_EVERY_S = 1.0


@dataclass(frozen=True)
class Handler:
    """What to do with a job, and how to record that it was given up on."""

    run: Callable[[Runtime, Claimed], None]
    give_up: Callable[[Runtime, Claimed, str], None]


def execute_run(runtime: Runtime, job: Claimed) -> None:
    """Run the questions still to do, writing answers in batches, then close the run."""
    run_id = str(job.payload["run_id"])
    with transaction(runtime, WORKER) as ctx:
        plan = execution.begin_run(ctx, run_id)
    if plan is None:
        _notify(runtime, run_id)  # a redelivered job still sends what the first one claimed
        return
    cancelled = _run_cancel_probe(runtime, job, run_id)
    record_answers = _recorder(runtime, job, plan)
    report = asyncio.run(_drive(runtime, plan.spec, plan.work, cancelled, record_answers))
    if job.lease_lost.is_set():
        return  # another worker took the run over: it records the rest and closes it
    if not report.cancelled:
        with transaction(runtime, WORKER) as ctx:
            judging = execution.plan_judging(ctx, run_id)
        if judging is not None:
            record = _judgement_recorder(runtime, job, judging)
            report = asyncio.run(_drive(runtime, judging.spec, judging.work, cancelled, record))
            if job.lease_lost.is_set():
                return
    _if_held(runtime, job, lambda ctx: execution.finish_run(ctx, run_id, report.cancelled))
    if not job.lease_lost.is_set():
        _notify(runtime, run_id)


def _still_holds(ctx: Context, job: Claimed) -> bool:
    """Whether this worker still holds `job`, checked in the transaction that records its work
    (the row stays locked until it commits); if not, marks the lease lost so the handler stops.

    The heartbeat notices a takeover only every third of the lease: a worker resumed after a
    stall wrote its in-flight answers before that, and the worker that had taken the run over
    then failed its own batch on the same questions.
    """
    if queue.holds(ctx, job.id, job.worker):
        return True
    job.lease_lost.set()
    return False


def _if_held(runtime: Runtime, job: Claimed, write: Callable[[Context], T]) -> T | None:
    """`write(ctx)` in a transaction that first checks that this worker still holds `job`
    (`_still_holds`); None, writing nothing, once another worker took the job over."""
    with transaction(runtime, WORKER) as ctx:
        return write(ctx) if _still_holds(ctx, job) else None


def _notify(runtime: Runtime, run_id: str) -> None:
    """Send the run's claimed notifications once its end has committed, each in its own write:
    a slow or failing receiver holds no lock and never fails the job."""
    with transaction(runtime, WORKER) as ctx:
        deliveries = notifications.claim_deliveries(ctx, run_id)
    for delivery in deliveries:
        deliver(runtime, delivery)


def deliver(runtime: Runtime, delivery: notifications.Delivery) -> None:
    """Send one claimed notification outside any transaction, then record how it went."""
    sent = notifications.send_delivery(runtime.settings, delivery)
    with transaction(runtime, WORKER) as ctx:
        notifications.record_delivery(ctx, delivery, sent)


def _recorder(runtime: Runtime, job: Claimed, plan: RunPlan) -> Callable[[list[Answer]], None]:
    def record(answers: list[Answer]) -> None:
        _if_held(runtime, job, lambda ctx: execution.record_answers(ctx, plan, answers))

    return record


def _judgement_recorder(
    runtime: Runtime, job: Claimed, plan: JudgingPlan
) -> Callable[[list[Answer]], None]:
    def record(replies: list[Answer]) -> None:
        _if_held(runtime, job, lambda ctx: execution.record_judgements(ctx, plan, replies))

    return record


async def _drive(
    runtime: Runtime,
    spec: ModelSpec,
    work: list[tuple[Item, str]],
    cancelled: Callable[[], bool],
    on_batch: Callable[[list[Answer]], None],
) -> EngineReport:
    """One engine pass over `work` with the model in `spec` (the run's model, or its judge)."""
    concurrency = runtime.settings.run_concurrency
    # The adapter sizes its connection pool to what the engine keeps in flight.
    adapter = build_adapter(replace(spec, params={**spec.params, "concurrency": concurrency}))
    try:
        return await run_items(
            adapter,
            work,
            concurrency=concurrency,
            on_batch=on_batch,
            is_cancelled=cancelled,
            secrets=(spec.api_key,) if spec.api_key else (),
        )
    finally:
        await adapter.aclose()


def _cancel_probe(
    runtime: Runtime, job: Claimed, asked: Callable[[Context], bool]
) -> Callable[[], bool]:
    """A cheap check the engine may call often, true once the work must stop: cancelled (read
    from the database at most twice a second), or the job's lease lost to another worker."""
    state = {"checked": 0.0, "cancelled": False}

    def cancelled() -> bool:
        if job.lease_lost.is_set():
            return True
        now = time.monotonic()
        if not state["cancelled"] and now - state["checked"] >= CANCEL_CHECK_S:
            state["checked"] = now
            with transaction(runtime, WORKER, write=False) as ctx:
                state["cancelled"] = asked(ctx)
        return bool(state["cancelled"])

    return cancelled


def _run_cancel_probe(runtime: Runtime, job: Claimed, run_id: str) -> Callable[[], bool]:
    return _cancel_probe(runtime, job, lambda ctx: execution.is_cancel_requested(ctx, run_id))


def abandon_run(runtime: Runtime, job: Claimed, error: str) -> None:
    """The run failed through the platform: record it and refund (unless another worker took
    the job over: the run is theirs to end)."""
    run_id = str(job.payload["run_id"])
    _if_held(runtime, job, lambda ctx: execution.abandon_run(ctx, run_id, error))
    if not job.lease_lost.is_set():
        _notify(runtime, run_id)


def execute_bundle_run(runtime: Runtime, job: Claimed) -> None:
    """Evaluate a custom benchmark's run in the sandbox, recording each task as it ends, then
    close the run with its scores. Each write checks that this worker still holds the job."""
    from benchgen.services.runs import bundle_execution

    run_id = str(job.payload["run_id"])
    plan = _if_held(runtime, job, lambda ctx: bundle_execution.begin_bundle_run(ctx, run_id))
    if job.lease_lost.is_set():
        return
    if plan is None:
        _notify(runtime, run_id)
        return

    def record(done: bundle_execution.DoneTask) -> bool:
        # The task's files are stored inside the transaction that checked the lease: the job's
        # row stays locked until they are, so no other worker can take the run over between the
        # check and the files, and a stalled worker's files never replace the new holder's.
        _if_held(runtime, job, lambda ctx: bundle_execution.record_task(ctx, run_id, done))
        return not job.lease_lost.is_set()

    report = bundle_execution.perform_bundle_run(
        runtime.settings, plan, record, _run_cancel_probe(runtime, job, run_id)
    )
    if job.lease_lost.is_set():
        return
    _if_held(runtime, job, lambda ctx: bundle_execution.finish_bundle_run(ctx, run_id, report))
    if not job.lease_lost.is_set():
        _notify(runtime, run_id)


def execute_training(runtime: Runtime, job: Claimed) -> None:
    """Train in a child process (resuming from the newest checkpoint after a crash), writing
    its live log in batches, then close the job. Each write checks that this worker still holds
    the job: one that stalled past its lease must not register a checkpoint, a model or a
    charge for a job another worker trains."""
    from benchgen.services.training import devices
    from benchgen.services.training import execution as training
    from benchgen.training.process import run_training

    training_id = str(job.payload["training_job_id"])
    # The attempt's GPUs on this machine are given back however it ends, an exception included.
    with (
        tempfile.TemporaryDirectory(prefix="benchgen-train-") as folder,
        devices.LOCAL.attempt() as gpus,
    ):
        work = _if_held(
            runtime, job, lambda ctx: training.begin_training(ctx, training_id, Path(folder), gpus)
        )
        if isinstance(work, training.Wait):
            raise queue.Postponed(work.seconds)
        if work is None:
            return
        log = _TrainingLog(runtime, job, training_id)
        outcome = run_training(
            work.spec,
            log.add,
            _cancel_probe(runtime, job, lambda ctx: training.is_cancel_requested(ctx, training_id)),
            work.memory_limit_bytes,
            work.timeout_s,
        )
        if job.lease_lost.is_set():
            return  # the child was stopped: the worker that took the job over trains it

        def finish(ctx: Context) -> None:
            log.write(ctx)
            training.finish_training(ctx, training_id, outcome)

        _if_held(runtime, job, finish)


class _TrainingLog:
    """Buffers the engine's events: step lines are written about once a second, a checkpoint
    at once (it is what an interrupted job resumes from), while this worker holds the job."""

    def __init__(self, runtime: Runtime, job: Claimed, training_id: str) -> None:
        self.runtime, self.job, self.training_id = runtime, job, training_id
        self.pending: list[dict[str, Any]] = []
        self.written = time.monotonic()

    def add(self, event: dict[str, Any]) -> None:
        self.pending.append(event)
        due = time.monotonic() - self.written >= TRAINING_LOG_EVERY_S
        if due or event.get("event") != "step":
            self.flush()

    def flush(self) -> None:
        if self.pending:
            # Lost: the events are dropped, and the cancel probe stops the child.
            _if_held(self.runtime, self.job, self.write)
            self.pending = []
        self.written = time.monotonic()

    def write(self, ctx: Context) -> None:
        """Write the pending events in the caller's transaction."""
        from benchgen.services.training import execution as training

        if self.pending:
            training.record_events(ctx, self.training_id, self.pending)


def abandon_training(runtime: Runtime, job: Claimed, error: str) -> None:
    """The job's workers kept dying: fail it and refund it in full (unless another worker took
    the job over: the job is theirs to end)."""
    from benchgen.services.training import execution as training

    training_id = str(job.payload["training_job_id"])
    _if_held(runtime, job, lambda ctx: training.abandon_training(ctx, training_id, error))


def execute_rejudging(runtime: Runtime, job: Claimed) -> None:
    """Have the judge judge again a completed run's answers whose judging failed (the judging
    pass of a run, alone), then compute the run's scores again."""
    run_id = str(job.payload["run_id"])
    with transaction(runtime, WORKER) as ctx:
        judging = execution.plan_judging(ctx, run_id)
    if judging is not None:
        record = _judgement_recorder(runtime, job, judging)
        asyncio.run(_drive(runtime, judging.spec, judging.work, job.lease_lost.is_set, record))
    _if_held(runtime, job, lambda ctx: rejudging.finish_rejudging(ctx, run_id))


def abandon_rejudging(runtime: Runtime, job: Claimed, error: str) -> None:
    """The re-judging kept failing: the answers still waiting failed their judging again."""
    run_id = str(job.payload["run_id"])
    _if_held(runtime, job, lambda ctx: rejudging.abandon_rejudging(ctx, run_id, error))


HANDLERS: dict[str, Handler] = {
    "run": Handler(execute_run, abandon_run),
    rejudging.JOB_KIND: Handler(execute_rejudging, abandon_rejudging),
    "bundle_run": Handler(execute_bundle_run, abandon_run),
    "training": Handler(execute_training, abandon_training),
}
