"""The training process sees only the GPUs its job was given (none for a CPU job), whatever the
worker sees; a job given several GPUs holds its model spread over them, and one that would not
fit on them is refused rather than trained half on the CPU."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from benchgen.training.process import child_env, run_training
from benchgen.training.spec import BaseWeights, Hyperparameters, TrainSpec


def spec(tmp_path: Path, **changes: Any) -> TrainSpec:
    base = BaseWeights("hf_folder", str(tmp_path / "base"))
    return TrainSpec(
        "lora", base, str(tmp_path / "rows.jsonl"), Hyperparameters(), str(tmp_path), **changes
    )


def test_a_gpu_job_sees_exactly_its_gpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1,2,3")
    monkeypatch.setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
    env = child_env(spec(tmp_path, device="cuda", gpus=("1", "3")))
    assert env["CUDA_VISIBLE_DEVICES"] == "1,3"
    assert env["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"  # what the indices mean, as for the worker


def test_a_cpu_job_sees_no_gpu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    env = child_env(spec(tmp_path, threads=2))
    assert env["CUDA_VISIBLE_DEVICES"] == ""
    assert (env["OMP_NUM_THREADS"], env["HF_HUB_OFFLINE"]) == ("2", "1")


def test_a_gpu_job_given_no_gpu_sees_none(tmp_path: Path) -> None:
    """Never the worker's first GPU by default."""
    assert child_env(spec(tmp_path, device="cuda"))["CUDA_VISIBLE_DEVICES"] == ""


def test_the_child_starts_with_that_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[dict[str, str]] = []

    def popen(*_: Any, env: dict[str, str], **__: Any) -> Any:
        started.append(env)
        raise OSError("not started")

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    monkeypatch.setattr(subprocess, "Popen", popen)
    job = spec(tmp_path, device="cuda", gpus=("1",))
    with pytest.raises(OSError):
        run_training(job, lambda _: None, lambda: False, None, 60)
    assert started == [child_env(job)]


@pytest.mark.parametrize(
    ("device", "gpus", "loads_on", "batches_on"),
    [
        ("cpu", (), "cpu", "cpu"),
        ("cuda", ("2",), "cuda", "cuda"),
        ("cuda", ("2", "5"), "spread", "cuda:0"),
    ],
)
def test_where_the_model_and_batches_go(
    train_extra: None,
    tmp_path: Path,
    device: str,
    gpus: tuple[str, ...],
    loads_on: str,
    batches_on: str,
) -> None:
    from benchgen.training.loop import placement

    placed, batches = placement(spec(tmp_path, device=device, gpus=gpus))
    assert (placed, str(batches)) == (loads_on, batches_on)


def test_a_spread_model_not_wholly_on_gpus_is_refused(tiny_base: BaseWeights) -> None:
    """accelerate puts what the GPUs cannot hold on the CPU (here: all of it, there is no GPU),
    lent to a GPU for each pass: those weights would not train."""
    import torch

    from benchgen.training.weights import SPREAD, load_model

    if torch.cuda.is_available():
        pytest.skip("a GPU is here: the tiny model fits on it")
    with pytest.raises(ValueError, match="does not fit in the memory of its GPUs"):
        load_model(tiny_base, device=SPREAD)
