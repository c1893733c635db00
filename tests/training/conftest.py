"""Fixtures for the training engine: a tiny random Llama, memorisable rows, one recorded job."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from benchgen.training.process import Outcome, run_training
from benchgen.training.spec import BaseWeights, Hyperparameters, JobType, TrainSpec
from tests.training.tiny_model import build_tiny_llama, write_chat_rows

IN_CI = os.environ.get("CI", "").lower() == "true"
TRAIN_EXTRA = ("torch", "transformers", "peft")
# High enough that a 2-layer random model visibly learns within a dozen steps.
FAST_HYPER = Hyperparameters(epochs=3, learning_rate=5e-2, batch_size=2, max_seq_length=64)


def require_or_skip(reason: str | None) -> None:
    """Skip for a missing optional piece, except under CI=true, where it must be there."""
    if reason:
        if IN_CI:
            pytest.fail(f"CI=true requires it: {reason}")
        pytest.skip(reason)


@pytest.fixture(scope="session")
def train_extra() -> None:
    """The train extra (torch, transformers, peft) is installed."""
    missing = [name for name in TRAIN_EXTRA if importlib.util.find_spec(name) is None]
    require_or_skip(
        f"needs {', '.join(missing)}: pip install 'benchgen[train]'" if missing else None
    )


@pytest.fixture(scope="session")
def tiny_base(train_extra: None, tmp_path_factory: pytest.TempPathFactory) -> BaseWeights:
    """A tiny random Llama folder (config.json, model.safetensors, tokenizer, chat template)."""
    return BaseWeights("hf_folder", str(build_tiny_llama(tmp_path_factory.mktemp("tiny-llama"))))


@pytest.fixture(scope="session")
def chat_rows(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Eight chat rows: four question/answer pairs, twice."""
    return write_chat_rows(tmp_path_factory.mktemp("data") / "chat.jsonl", repeat=2)


@dataclass
class Recorded:
    """One attempt: its spec, every event it sent, and its outcome."""

    spec: TrainSpec
    outcome: Outcome
    events: list[dict[str, Any]] = field(default_factory=list)

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["event"] == kind]


def train(
    spec: TrainSpec,
    should_stop: Callable[[list[dict[str, Any]]], bool] = lambda events: False,
    memory_limit_bytes: int | None = None,
    timeout_s: float = 300,
) -> Recorded:
    """Run `spec` to its end; `should_stop` sees the events so far."""
    events: list[dict[str, Any]] = []
    outcome = run_training(
        spec, events.append, lambda: should_stop(events), memory_limit_bytes, timeout_s
    )
    return Recorded(spec, outcome, events)


def tiny_spec(
    base: BaseWeights, rows: Path, output: Path, job_type: JobType = "lora", **changes: Any
) -> TrainSpec:
    """A job on the tiny model, checkpointing every 2 steps unless `changes` say else."""
    fields: dict[str, Any] = {"hyper": FAST_HYPER, "checkpoint_every": 2} | changes
    return TrainSpec(job_type, base, str(rows), output_dir=str(output), **fields)


@pytest.fixture(scope="session")
def lora_job(
    tiny_base: BaseWeights, chat_rows: Path, tmp_path_factory: pytest.TempPathFactory
) -> Recorded:
    """An uninterrupted LoRA job of 12 steps on the tiny model, shared by several tests."""
    return train(tiny_spec(tiny_base, chat_rows, tmp_path_factory.mktemp("lora-job")))
