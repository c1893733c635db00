"""Training plans as a careless or hostile user makes them: a Trained model never takes a
platform model's name; a dataset a launch is using cannot be deleted under it; a deleted
Trained model is no longer pointed at."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from benchgen.core.context import Principal
from benchgen.core.errors import Conflict, InvalidInput, NotFound
from benchgen.db.tables import TrainingJob
from benchgen.jobs.handlers import WORKER
from benchgen.services import models
from benchgen.services.datasets import datasets
from benchgen.services.runtime import transaction
from benchgen.services.training import execution, jobs, plans
from benchgen.training.process import Outcome
from tests.support import World
from tests.training.tiny_model import write_header_folder

OPERATOR = Principal.cli(None)
ROWS = b"".join(b'{"prompt": "Q%d", "completion": "A%d"}\n' % (i, i) for i in range(10))


@pytest.fixture
def scene(world: World, tmp_path: Path) -> dict[str, Any]:
    """Ana with 1,000 credits and a dataset; the operator's tiny Llama folder as a base (its
    header alone: read without torch, so each plan takes milliseconds)."""
    ana = world.user("ana@example.com", credits_=1000)
    folder = write_header_folder(tmp_path / "tiny")
    spec = {"name": "Tiny Llama", "kind": "local_hf", "endpoint_model": str(folder)}
    base = world.do(OPERATOR, models.create_platform_model, spec)
    data = world.do(Principal.web(ana), datasets.upload_dataset, ROWS, "d.jsonl", {"name": "QA"})
    return {"web": Principal.web(ana), "base": base.id, "dataset": data.id}


def _request(scene: dict[str, Any], **extra: Any) -> dict[str, Any]:
    # A full fine-tune: the header-only base has no module a LoRA adapter could target.
    base = {"base_model_id": scene["base"], "dataset_id": scene["dataset"], "job_type": "sft"}
    return {**base, **extra}


@pytest.mark.parametrize("service", [plans.plan_training, jobs.start_training])
def test_a_trained_model_never_takes_a_platform_models_name(
    world: World, scene: dict[str, Any], service: Any
) -> None:
    """Adding or renaming a model of one's own refuses a platform model's name (whoever picks
    a model by name could take either); a job would have named its Trained model so."""
    with pytest.raises(InvalidInput, match="platform model's name") as caught:
        world.do(scene["web"], service, _request(scene, name="tiny LLAMA"))
    assert [problem["loc"] for problem in caught.value.errors] == [["name"]]
    queued = world.ctx_call(
        OPERATOR, lambda ctx: ctx.session.scalar(select(func.count(TrainingJob.id)))
    )
    assert queued == 0
    plan = world.do(scene["web"], plans.plan_training, _request(scene, name="Tiny Llama tuned"))
    assert plan.name == "Tiny Llama tuned"


@pytest.mark.both_backends
def test_a_dataset_is_not_deleted_under_a_launch_not_yet_committed(
    world: World, scene: dict[str, Any]
) -> None:
    """The deletion read "no job uses it" while the launch was still open; both committed and
    the job was queued on a deleted dataset whose file was gone (PostgreSQL)."""
    launched = threading.Event()
    outcome: list[object] = []

    def launch() -> None:
        with transaction(world.rt, scene["web"]) as ctx:
            outcome.append(jobs.start_training(ctx, _request(scene)))
            launched.set()
            time.sleep(0.3)  # still open while the deletion runs

    def delete() -> None:
        launched.wait(10)
        try:
            world.do(scene["web"], datasets.delete_dataset, scene["dataset"])
        except Conflict as exc:
            outcome.append(exc)

    threads = [threading.Thread(target=launch), threading.Thread(target=delete)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert isinstance(outcome[-1], Conflict), outcome
    assert world.do(scene["web"], datasets.get_dataset, scene["dataset"]).row_count == 10


def test_a_deleted_trained_model_is_no_longer_pointed_at(
    world: World, scene: dict[str, Any], tmp_path: Path
) -> None:
    """The job kept naming the deleted model: its page said it "joined the catalogue" with a
    link to a 404, and the agent offered to run it."""
    job = world.do(scene["web"], jobs.start_training, _request(scene, name="Tuned"))
    final = tmp_path / "final"
    final.mkdir()
    (final / "adapter_config.json").write_text("{}")
    world.do(WORKER, execution.finish_training, job.id, Outcome("completed", 3, str(final), "", 0))
    made = world.do(scene["web"], jobs.get_training_job, job.id).trained_model_id
    assert made is not None
    world.do(scene["web"], models.delete_model, made)
    with pytest.raises(NotFound):
        world.do(scene["web"], models.get_model, made)
    assert world.do(scene["web"], jobs.get_training_job, job.id).trained_model_id is None
    assert [j.trained_model_id for j in world.do(scene["web"], jobs.list_training_jobs)] == [None]
