"""GPU training jobs train on the GPUs the worker gives them: free ones of their pool's type on
the worker's machine, passed to the training process as its CUDA_VISIBLE_DEVICES, and given back
however the attempt ends. A worker without them leaves the job queued, uncharged, its attempts
kept. CPU jobs see no GPU and wait for none. GPU detection is faked: no GPU is needed."""

from __future__ import annotations

from contextlib import ExitStack
from datetime import timedelta
from pathlib import Path
from typing import Any, Literal

import pytest
from sqlalchemy import select

from benchgen.core.context import Principal
from benchgen.core.statuses import JobStatus, TrainingStatus
from benchgen.db.tables import CreditEntry, Job, TrainingEvent, TrainingJob
from benchgen.jobs import handlers
from benchgen.jobs.handlers import WORKER
from benchgen.jobs.worker import Worker
from benchgen.services import models, queue
from benchgen.services.datasets import datasets
from benchgen.services.runtime import transaction
from benchgen.services.training import devices, execution, jobs
from benchgen.services.training.devices import LocalGpus
from benchgen.training import process
from benchgen.training.process import Ending, Outcome, child_env
from tests.support import OPERATOR, World
from tests.training.tiny_model import write_header_folder

pytestmark = pytest.mark.usefixtures("gpu_locks")

ROWS = b"".join(b'{"prompt": "Q%d", "completion": "A%d"}\n' % (i, i) for i in range(10))
MACHINE = ["NVIDIA H200", "NVIDIA H200", "NVIDIA A100-SXM4-80GB"]


@pytest.fixture
def scene(world: World, tmp_path: Path) -> dict[str, Any]:
    """Ana, a local base and a dataset, on a deployment whose pools are H200=2 and A100=1."""
    world.rt.settings.training_gpus = "H200=2,A100=1"
    ana = world.user("ana@example.com", credits_=1000)
    folder = write_header_folder(tmp_path / "base")
    base = world.do(
        OPERATOR,
        models.create_platform_model,
        {"name": "Base", "kind": "local_hf", "endpoint_model": str(folder)},
    )
    web = Principal.web(ana)
    data = world.do(web, datasets.upload_dataset, ROWS, "d.jsonl", {"name": "QA"})
    return {"ana": ana, "web": web, "base": base.id, "dataset": data.id}


def launch(world: World, scene: dict[str, Any], gpu_type: str | None, gpus: int = 1) -> str:
    spec = {
        "base_model_id": scene["base"],
        "dataset_id": scene["dataset"],
        "hyperparameters": {"target_modules": ["embed_tokens"]},  # the header folder's module
        "compute": {"gpu_type": gpu_type, "gpus": gpus} if gpu_type else {},
    }
    return world.do(scene["web"], jobs.start_training, spec).id


def begin(world: World, training_id: str, folder: Path, hold: devices.Hold | None) -> Any:
    return world.do(WORKER, execution.begin_training, training_id, folder, hold)


def visible(work: Any) -> str:
    assert isinstance(work, execution.Work)
    return child_env(work.spec)["CUDA_VISIBLE_DEVICES"]


def row(world: World, training_id: str) -> TrainingJob:
    def read(ctx: Any) -> TrainingJob:
        found = ctx.session.get(TrainingJob, training_id)
        ctx.session.expunge(found)
        return found

    found: TrainingJob = world.ctx_call(OPERATOR, read)
    return found


def lines(world: World, training_id: str) -> list[str]:
    return world.ctx_call(
        OPERATOR,
        lambda ctx: list(
            ctx.session.scalars(
                select(TrainingEvent.line).where(TrainingEvent.job_id == training_id)
            )
        ),
    )


def credit_kinds(world: World, user_id: str) -> list[str]:
    query = select(CreditEntry.kind).where(CreditEntry.user_id == user_id)
    return world.ctx_call(OPERATOR, lambda ctx: [k for k in ctx.session.scalars(query)])


def test_two_jobs_of_a_two_gpu_pool_train_on_different_gpus(
    world: World, scene: dict[str, Any], tmp_path: Path
) -> None:
    """Both trained on "cuda", GPU 0, while the deployment charged for two."""
    local = LocalGpus(detect=lambda: MACHINE, visible=lambda: None)
    first, second = launch(world, scene, "H200"), launch(world, scene, "H200")
    other = launch(world, scene, "A100")
    with ExitStack() as attempts:
        works = [
            begin(world, job, tmp_path / job, attempts.enter_context(local.attempt()))
            for job in (first, second, other)
        ]
        assert [visible(work) for work in works] == ["0", "1", "2"]
        assert all(work.spec.device == "cuda" for work in works)
        assert local.held() == {0, 1, 2}
    assert local.held() == set()


def test_a_job_asking_for_two_gpus_sees_both(
    world: World, scene: dict[str, Any], tmp_path: Path
) -> None:
    local = LocalGpus(detect=lambda: MACHINE, visible=lambda: "3,4,6")
    job = launch(world, scene, "H200", gpus=2)
    with local.attempt() as hold:
        work = begin(world, job, tmp_path, hold)
        assert visible(work) == "3,4"  # the worker's own GPUs 3 and 4, as it sees them
        assert work.spec.gpus == ("3", "4")


def test_a_worker_without_free_gpus_of_the_type_leaves_the_job_queued(
    world: World, scene: dict[str, Any], tmp_path: Path
) -> None:
    """The pools count GPUs deployment-wide; this machine has only an A100."""
    local = LocalGpus(detect=lambda: ["NVIDIA A100-SXM4-80GB"], visible=lambda: None)
    job = launch(world, scene, "H200")
    for _ in range(2):
        with local.attempt() as hold:
            assert isinstance(begin(world, job, tmp_path, hold), execution.Wait)
        assert local.held() == set()
    waiting = row(world, job)
    assert waiting.status == TrainingStatus.QUEUED and waiting.started_at is None
    assert waiting.waiting_for == (
        "waiting for a worker with 1 free H200 GPU(s): the last to look had 0"
    )
    assert [line for line in lines(world, job) if line.startswith("Not placed")] == [
        f"Not placed: {waiting.waiting_for}"
    ]  # once, however often it looks
    assert credit_kinds(world, scene["ana"]) == ["grant", "reserve"]


def test_a_job_not_placed_goes_back_to_the_queue_with_its_attempts_kept(
    world: World, scene: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(devices, "LOCAL", LocalGpus(detect=list, visible=lambda: None))

    def never(*_: Any) -> Outcome:
        raise AssertionError("trained without its GPUs")

    monkeypatch.setattr(process, "run_training", never)
    job = launch(world, scene, "H200")
    assert Worker(world.rt).run_once()
    queued = world.ctx_call(OPERATOR, lambda ctx: ctx.session.scalars(select(Job)).one())
    assert (queued.status, queued.attempts, queued.lease_owner) == (JobStatus.QUEUED, 0, None)
    assert row(world, job).status == TrainingStatus.QUEUED
    assert "H200" in row(world, job).waiting_for


def _ended_as(status: Ending, tmp_path: Path) -> Outcome:
    if status != "completed":
        return Outcome(status, 1, None, "" if status == "cancelled" else "it ended", 0)
    final = tmp_path / "final"
    final.mkdir()
    (final / "adapter_model.safetensors").write_bytes(b"x")
    return Outcome("completed", 3, str(final), "", 0)


@pytest.mark.parametrize("ending", ["completed", "failed", "cancelled", "timed_out", "crash"])
def test_the_gpus_come_back_however_the_attempt_ends(
    world: World,
    scene: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    ending: Ending | Literal["crash"],
) -> None:
    local = LocalGpus(detect=lambda: MACHINE, visible=lambda: None)
    monkeypatch.setattr(devices, "LOCAL", local)
    seen: list[str] = []

    def trainer(spec: Any, *_: Any) -> Outcome:
        seen.append(child_env(spec)["CUDA_VISIBLE_DEVICES"])
        assert local.held() == {0, 1}
        if ending == "crash":
            raise OSError("the training process could not start")
        return _ended_as(ending, tmp_path)

    monkeypatch.setattr(process, "run_training", trainer)
    job = launch(world, scene, "H200", gpus=2)
    with transaction(world.rt, WORKER) as ctx:
        claimed = queue.claim(ctx, "worker", timedelta(seconds=60))
    assert claimed is not None
    if ending == "crash":
        with pytest.raises(OSError):
            handlers.execute_training(world.rt, claimed)
    else:
        handlers.execute_training(world.rt, claimed)
        assert row(world, job).status != TrainingStatus.RUNNING
    assert seen == ["0,1"]
    assert local.held() == set()


def test_a_cpu_job_sees_no_gpu_and_waits_for_none(
    world: World, scene: dict[str, Any], tmp_path: Path
) -> None:
    def detect() -> list[str]:
        raise AssertionError("a CPU job looked for GPUs")

    local = LocalGpus(detect=detect, visible=lambda: "0")
    job = launch(world, scene, None)
    with local.attempt() as hold:
        work = begin(world, job, tmp_path, hold)
    assert isinstance(work, execution.Work)
    assert (work.spec.device, work.spec.gpus, visible(work)) == ("cpu", (), "")
    assert work.memory_limit_bytes is not None  # the CPU pool's memory limit, as before
    assert row(world, job).status == TrainingStatus.RUNNING


def test_a_gpu_job_begun_without_a_hold_is_refused(
    world: World, scene: dict[str, Any], tmp_path: Path
) -> None:
    job = launch(world, scene, "H200")
    with pytest.raises(ValueError, match="no hold"):
        begin(world, job, tmp_path, None)
    assert row(world, job).status == TrainingStatus.QUEUED
