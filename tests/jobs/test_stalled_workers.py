"""A worker that stalled past its lease (SIGSTOP, a long GC pause, a closed laptop lid) and woke
after another worker took its job over records nothing of it — not a custom run's tasks or end,
not a training job's start, log, checkpoint, Trained model or credits, nor the give-up of either
— whatever its heartbeat has noticed: each such write checks the lease in its own transaction,
with the job's row locked. The takeover is made deterministic by moving the test's clock past
the lease and claiming the job as another worker at the chosen moment."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from benchgen.core.clock import ManualClock
from benchgen.core.context import Principal
from benchgen.core.statuses import TrainingStatus
from benchgen.db.tables import CreditEntry, Model, TrainingEvent, TrainingJob
from benchgen.jobs import handlers
from benchgen.jobs.handlers import WORKER
from benchgen.services import _model_specs, models, queue
from benchgen.services._artifacts import store_for
from benchgen.services.benchmarks import bundles
from benchgen.services.datasets import datasets
from benchgen.services.queue import Claimed
from benchgen.services.runs import bundle_execution, launch, run_log, submissions
from benchgen.services.runtime import Runtime, transaction
from benchgen.services.training import execution as training
from benchgen.services.training import jobs
from benchgen.training import process
from benchgen.training.process import Outcome
from tests.bundle_factory import bundle, require_sandbox, results
from tests.support import MCQ, OPERATOR, World
from tests.training.tiny_model import write_header_folder

pytestmark = pytest.mark.both_backends  # the lease check locks the job's row on PostgreSQL

LEASE = timedelta(seconds=15)
ROWS = b"".join(b'{"prompt": "Q%d", "completion": "A%d"}\n' % (i, i) for i in range(10))


def _claim(runtime: Runtime, worker: str) -> Claimed:
    with transaction(runtime, WORKER) as ctx:
        job = queue.claim(ctx, worker, LEASE)
    assert job is not None
    return job


def _take_over(runtime: Runtime, clock: ManualClock, stale: Claimed) -> Claimed:
    """The stalled worker's lease runs out, and another worker claims its job."""
    clock.advance(seconds=20)
    current = _claim(runtime, "the-other-worker")
    assert current.id == stale.id
    return current


def _ledger(world: World, user_id: str) -> list[str]:
    """The kinds of the user's ledger entries after their grant."""
    query = select(CreditEntry.kind).where(
        CreditEntry.user_id == user_id, CreditEntry.kind != "grant"
    )
    kinds: list[str] = world.ctx_call(OPERATOR, lambda ctx: sorted(ctx.session.scalars(query)))
    return kinds


# Custom runs: each task's predictions, output and log line, and the run's end.


@pytest.fixture
def custom_run(world: World) -> tuple[str, str]:
    """(user, run) of a submission to a custom benchmark, queued."""
    require_sandbox()
    ana = world.user("ana@example.com")
    created = world.do(Principal.web(ana), bundles.upload_bundle, bundle(), "b.zip")
    answers = results({"q1": "Paris", "q2": "4"})
    run = world.do(Principal.web(ana), submissions.submit, created.benchmark.id, answers, "a.zip")
    return ana, run.id


def _log(world: World, user: str, run_id: str) -> list[str]:
    return [line.line for line in world.do(Principal.web(user), run_log.read_log, run_id)]


def _kept(runtime: Runtime, run_id: str) -> list[str]:
    """What the run stored in artifact storage (predictions and the programs' output)."""
    return sorted(store_for(runtime.settings).keys(f"runs/{run_id}"))


def _run_status(world: World, user: str, run_id: str) -> str:
    return str(world.do(Principal.web(user), launch.get_run, run_id).status)


def _finished_once(world: World, runtime: Runtime, user: str, run_id: str, job: Claimed) -> None:
    """The worker that took the run over evaluates it, and it ends once, with its scores."""
    handlers.execute_bundle_run(runtime, job)
    assert not job.lease_lost.is_set()
    done = world.do(Principal.web(user), launch.get_run, run_id)
    assert done.status == "completed" and done.scores["accuracy"] == 1.0, done.error
    assert sum(line.startswith("Completed") for line in _log(world, user, run_id)) == 1


def test_a_stalled_worker_records_no_task_of_a_custom_run_taken_over(
    world: World,
    runtime: Runtime,
    clock: ManualClock,
    custom_run: tuple[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """It kept the task's predictions, logged its scores and closed the run, over the worker
    running it."""
    ana, run_id = custom_run
    stale = _claim(runtime, "stalled-worker")
    taken: list[Claimed] = []
    evaluate = bundle_execution._evaluate

    def stalled_while_scoring(*args: Any) -> Any:
        outcome = evaluate(*args)
        taken.append(_take_over(runtime, clock, stale))  # the program ran; the worker froze
        return outcome

    monkeypatch.setattr(bundle_execution, "_evaluate", stalled_while_scoring)
    handlers.execute_bundle_run(runtime, stale)
    monkeypatch.undo()
    assert stale.lease_lost.is_set()
    assert _run_status(world, ana, run_id) == "running"
    assert not [line for line in _log(world, ana, run_id) if line.startswith("Task ")]
    assert _kept(runtime, run_id) == []
    _finished_once(world, runtime, ana, run_id, taken[0])
    tasks = [line for line in _log(world, ana, run_id) if line.startswith("Task ")]
    assert [line.split(":")[0] for line in tasks] == ["Task 0"]
    assert _kept(runtime, run_id) == [
        f"runs/{run_id}/predictions/task-0.zip",
        f"runs/{run_id}/program-output/task-0.txt",
    ]


def test_a_stalled_worker_does_not_close_a_custom_run_taken_over(
    world: World,
    runtime: Runtime,
    clock: ManualClock,
    custom_run: tuple[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Taken over after its last task, it settled and closed the run the other was running."""
    ana, run_id = custom_run
    stale = _claim(runtime, "stalled-worker")
    taken: list[Claimed] = []
    perform = bundle_execution.perform_bundle_run

    def stalled_after_scoring(*args: Any) -> Any:
        report = perform(*args)
        taken.append(_take_over(runtime, clock, stale))
        return report

    monkeypatch.setattr(bundle_execution, "perform_bundle_run", stalled_after_scoring)
    handlers.execute_bundle_run(runtime, stale)
    monkeypatch.undo()
    assert stale.lease_lost.is_set()
    assert _run_status(world, ana, run_id) == "running"
    assert not [line for line in _log(world, ana, run_id) if line.startswith("Completed")]
    _finished_once(world, runtime, ana, run_id, taken[0])


def test_a_stalled_worker_gives_up_no_run_taken_over(
    world: World, runtime: Runtime, clock: ManualClock
) -> None:
    """Its attempts ran out while another worker ran the job: it failed and refunded that run
    (custom runs and model runs give up alike)."""
    ana = world.user("ana@example.com", credits_=100)
    run_id = world.do(
        Principal.web(ana), launch.start_run, world.benchmark(ana, MCQ), "mdl_builtin_first"
    ).id
    stale = _claim(runtime, "stalled-worker")
    _take_over(runtime, clock, stale)
    handlers.abandon_run(runtime, stale, "gave up")
    assert stale.lease_lost.is_set()
    assert _run_status(world, ana, run_id) == "queued"
    assert "refund" not in _ledger(world, ana)


# Training jobs: the start, the live log and checkpoints, the end and its Trained model.


@pytest.fixture
def trainee(world: World, tmp_path: Path) -> tuple[str, str]:
    """(user, training job) of a LoRA job on a local base, queued."""
    ana = world.user("ana@example.com", credits_=1000)
    folder = write_header_folder(tmp_path / "base")
    spec = {"name": "Base", "kind": "local_hf", "endpoint_model": str(folder)}
    base = world.do(OPERATOR, models.create_platform_model, spec)
    web = Principal.web(ana)
    data = world.do(web, datasets.upload_dataset, ROWS, "d.jsonl", {"name": "QA"})
    hyper = {"target_modules": ["embed_tokens"]}  # the only module the header folder has
    spec = {"base_model_id": base.id, "dataset_id": data.id, "hyperparameters": hyper}
    job = world.do(web, jobs.start_training, spec)
    return ana, job.id


Trainer = Callable[..., Outcome]


def _train_with(monkeypatch: pytest.MonkeyPatch, trainer: Trainer) -> None:
    """Stand in for the training child process (the handler imports it when a job comes)."""
    monkeypatch.setattr(process, "run_training", trainer)


def _job(world: World, training_id: str) -> TrainingJob:
    def read(ctx: Any) -> TrainingJob:
        row = ctx.session.get(TrainingJob, training_id)
        ctx.session.expunge(row)
        return row

    row: TrainingJob = world.ctx_call(OPERATOR, read)
    return row


def _lines(world: World, training_id: str) -> list[str]:
    query = select(TrainingEvent.line).where(TrainingEvent.job_id == training_id)
    lines: list[str] = world.ctx_call(OPERATOR, lambda ctx: list(ctx.session.scalars(query)))
    return lines


def _trained_models(world: World, training_id: str) -> int:
    query = select(Model.id).where(Model.training_job_id == training_id)
    return len(world.ctx_call(OPERATOR, lambda ctx: list(ctx.session.scalars(query))))


def _folder(path: Path) -> str:
    path.mkdir(parents=True)
    (path / "adapter.bin").write_bytes(b"weights")
    return str(path)


def test_a_stalled_worker_does_not_restart_a_training_job_taken_over(
    world: World,
    runtime: Runtime,
    clock: ManualClock,
    trainee: tuple[str, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Woken before its start, it "resumed" the job the other was training, from step 0."""
    _, training_id = trainee
    stale = _claim(runtime, "stalled-worker")
    _take_over(runtime, clock, stale)
    with transaction(runtime, WORKER) as ctx:
        assert isinstance(training.begin_training(ctx, training_id, tmp_path), training.Work)
        training.record_events(ctx, training_id, [{"event": "step", "step": 2, "loss": 1.0}])

    def never(*_: Any) -> Outcome:
        raise AssertionError("the stalled worker trained")

    _train_with(monkeypatch, never)
    handlers.execute_training(runtime, stale)
    assert stale.lease_lost.is_set()
    assert _job(world, training_id).steps_done == 2
    assert not [line for line in _lines(world, training_id) if line.startswith("Resumed")]


def test_a_stalled_worker_keeps_no_checkpoint_of_a_training_job_taken_over(
    world: World,
    runtime: Runtime,
    clock: ManualClock,
    trainee: tuple[str, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Its checkpoint replaced the one the other worker resumes from, and deleted it."""
    ana, training_id = trainee

    def stalled_before_a_checkpoint(spec: Any, on_event: Any, should_stop: Any, *_: Any) -> Any:
        on_event({"event": "started", "device": "cpu"})  # written at once: still its job
        on_event({"event": "step", "step": 1, "loss": 1.5})  # kept for the next write
        _take_over(runtime, clock, stale)
        on_event({"event": "checkpoint", "step": 2, "dir": _folder(tmp_path / "ckpt")})
        assert should_stop(), "the lost lease must stop the child"
        return Outcome("cancelled", 2, None, "", 0)

    stale = _claim(runtime, "stalled-worker")
    _train_with(monkeypatch, stalled_before_a_checkpoint)
    handlers.execute_training(runtime, stale)
    assert stale.lease_lost.is_set()
    row = _job(world, training_id)
    assert (row.status, row.checkpoint_key, row.steps_done) == (TrainingStatus.RUNNING, None, 0)
    assert not store_for(runtime.settings).keys(f"training/{training_id}")
    lines = _lines(world, training_id)
    assert "Training on cpu: ? trainable parameters, from step 0" in lines
    assert not [line for line in lines if line.startswith(("step 1", "Checkpoint"))]
    assert _ledger(world, ana) == ["reserve"]


def test_a_stalled_worker_registers_no_model_for_a_training_job_taken_over(
    world: World,
    runtime: Runtime,
    clock: ManualClock,
    trainee: tuple[str, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """It finished the job the other was training: a Trained model, and credits settled, twice
    once the other finished too."""
    ana, training_id = trainee
    taken: list[Claimed] = []

    def stalled_after_training(spec: Any, *_: Any) -> Outcome:
        taken.append(_take_over(runtime, clock, stale))
        return Outcome("completed", 3, _folder(Path(spec.output_dir) / "final"), "", 0)

    stale = _claim(runtime, "stalled-worker")
    _train_with(monkeypatch, stalled_after_training)
    handlers.execute_training(runtime, stale)
    assert stale.lease_lost.is_set()
    assert _job(world, training_id).status == TrainingStatus.RUNNING
    assert _trained_models(world, training_id) == 0
    assert not store_for(runtime.settings).keys(_model_specs.trained_key(training_id))
    assert _ledger(world, ana) == ["reserve"]

    def trained(spec: Any, *_: Any) -> Outcome:
        return Outcome("completed", 3, _folder(Path(spec.output_dir) / "final"), "", 0)

    _train_with(monkeypatch, trained)
    handlers.execute_training(runtime, taken[0])
    assert _job(world, training_id).status == TrainingStatus.COMPLETED
    assert _trained_models(world, training_id) == 1
    assert _ledger(world, ana) == ["reserve", "settle"]


def test_a_stalled_worker_gives_up_no_training_job_taken_over(
    world: World, runtime: Runtime, clock: ManualClock, trainee: tuple[str, str]
) -> None:
    """Its attempts ran out while another worker trained the job: it failed and refunded it."""
    ana, training_id = trainee
    stale = _claim(runtime, "stalled-worker")
    _take_over(runtime, clock, stale)
    handlers.abandon_training(runtime, stale, "gave up")
    assert stale.lease_lost.is_set()
    assert _job(world, training_id).status == TrainingStatus.QUEUED
    assert _ledger(world, ana) == ["reserve"]
