"""Training bases as a careless operator leaves them: a folder without a tokenizer is refused
before any job is queued on it; a base whose files change in place is judged again."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchgen.core.context import Principal
from benchgen.core.errors import InvalidInput
from benchgen.services import models
from benchgen.services.datasets import datasets
from benchgen.services.training import bases, plans
from benchgen.training.sizing import describe_base
from benchgen.training.spec import BaseWeights
from tests.support import World
from tests.training.header_base import header_request
from tests.training.tiny_model import write_header_folder

OPERATOR = Principal.cli(None)
ROWS = b"".join(b'{"prompt": "Q%d", "completion": "A%d"}\n' % (i, i) for i in range(4))


def test_weights_damaged_in_place_make_the_base_untrainable(world: World, tmp_path: Path) -> None:
    """The description was cached by the folder's mtime, which a file rewritten in place does
    not change: the damaged base stayed trainable, and its jobs failed once queued."""
    folder = tmp_path / "tiny"
    ana, request = header_request(world, folder, 4)
    world.do(ana, plans.plan_training, request)  # judged, and cached, as trainable
    (folder / "model.safetensors").write_bytes(b"garbage\n")  # the same file, rewritten
    listed = {choice.id: choice for choice in world.do(ana, bases.list_training_bases)}
    base = request["base_model_id"]
    assert not listed[base].trainable
    assert listed[base].reason.startswith("its weights could not be read (model.safetensors")
    with pytest.raises(InvalidInput) as exc:
        world.do(ana, plans.plan_training, request)
    assert exc.value.errors[0]["loc"] == ["base_model_id"]


def test_a_folder_without_a_tokenizer_is_not_a_base(world: World, tmp_path: Path) -> None:
    """A folder of config.json and safetensors alone, as the docs ask for, was added and
    listed as trainable: its jobs failed once queued, loading a tokenizer that was not there."""
    folder = write_header_folder(tmp_path / "tiny")
    (folder / "tokenizer.json").unlink()
    info = describe_base(BaseWeights("hf_folder", str(folder)))
    assert not info.trainable
    assert info.reason.startswith("it has no tokenizer (none of tokenizer.json, tokenizer.model")
    spec = {"name": "Tiny", "kind": "local_hf", "endpoint_model": str(folder)}
    with pytest.raises(InvalidInput) as exc:
        world.do(OPERATOR, models.create_platform_model, spec)
    assert exc.value.errors[0]["loc"] == ["endpoint_model"]
    assert "it has no tokenizer" in exc.value.message


def test_a_sequence_past_learned_positions_is_refused_in_the_plan(
    world: World, tmp_path: Path
) -> None:
    """A GPT-2 base (1,024 learned positions, `n_positions` in its config) planned with a
    longer max_seq_length: the job failed once queued with "index out of range in self"."""
    ana = Principal.web(world.user("ana@example.com", credits_=1000))
    folder = write_header_folder(tmp_path / "gpt2")
    config = {"model_type": "gpt2", "n_embd": 2, "n_layer": 1, "vocab_size": 4, "n_positions": 32}
    (folder / "config.json").write_text(json.dumps(config))
    spec = {"name": "Tiny GPT-2", "kind": "local_hf", "endpoint_model": str(folder)}
    base = world.do(OPERATOR, models.create_platform_model, spec)
    data = world.do(ana, datasets.upload_dataset, ROWS, "d.jsonl", {"name": "QA"})
    request = {"base_model_id": base.id, "dataset_id": data.id, "job_type": "sft"}
    with pytest.raises(InvalidInput) as exc:
        world.do(ana, plans.plan_training, request | {"hyperparameters": {"max_seq_length": 64}})
    assert exc.value.errors[0]["loc"] == ["hyperparameters", "max_seq_length"]
    assert "reads at most 32 tokens" in exc.value.message
    plan = world.do(ana, plans.plan_training, request | {"hyperparameters": {"max_seq_length": 32}})
    assert plan.hyperparameters["max_seq_length"] == 32
