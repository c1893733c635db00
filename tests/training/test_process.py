"""Training jobs in a child process on the tiny model: events, checkpoints, stop, resume, limits."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchgen.training.spec import BaseWeights, Hyperparameters
from tests.training.conftest import FAST_HYPER, Recorded, tiny_spec, train

ONLY_WEIGHTS = {".json", ".safetensors"}


def _files(folder: str | Path) -> set[str]:
    return {p.name for p in Path(folder).iterdir()}


def test_a_lora_job_reports_every_step_and_ends_with_a_safetensors_checkpoint(
    lora_job: Recorded,
) -> None:
    outcome, steps = lora_job.outcome, lora_job.of("step")
    assert (outcome.status, outcome.error, outcome.steps_done) == ("completed", "", 12)
    [started] = lora_job.of("started")
    assert (started["total_steps"], started["start_step"], started["rows"]) == (12, 0, 8)
    assert 0 < started["trainable_params"] < 10_000  # the adapters, not the 40k base weights
    assert [e["step"] for e in steps] == list(range(1, 13))
    assert [e["epoch"] for e in steps] == [1] * 4 + [2] * 4 + [3] * 4
    assert steps[0]["learning_rate"] == FAST_HYPER.learning_rate
    assert steps[-1]["learning_rate"] < steps[0]["learning_rate"] / 10  # linear decay
    assert [e["step"] for e in lora_job.of("checkpoint")] == [2, 4, 6, 8, 10]
    assert lora_job.events[-1]["event"] == "completed"
    assert outcome.final_dir == str(Path(lora_job.spec.output_dir) / "final")
    assert _files(outcome.final_dir) == {"adapter_config.json", "adapter_model.safetensors"}
    assert {"optimizer.safetensors", "state.json"} < _files(lora_job.of("checkpoint")[0]["dir"])
    written = [p for p in Path(lora_job.spec.output_dir).rglob("*") if p.is_file()]
    assert {p.suffix for p in written} == ONLY_WEIGHTS  # nothing pickled, no partial folders
    assert outcome.peak_rss_bytes > 100 * 2**20


def test_the_loss_falls_on_rows_it_can_memorise(lora_job: Recorded) -> None:
    losses = [e["loss"] for e in lora_job.of("step")]
    assert sum(losses[-4:]) / 4 < sum(losses[:4]) / 4 - 0.05


def test_a_resumed_job_continues_where_its_checkpoint_stood(
    lora_job: Recorded, tmp_path: Path
) -> None:
    checkpoint = lora_job.of("checkpoint")[1]  # after step 4, half-way through epoch 2
    spec = tiny_spec(
        lora_job.spec.base,
        Path(lora_job.spec.dataset_path),
        tmp_path,
        resume_dir=checkpoint["dir"],
    )
    resumed = train(spec)
    assert (resumed.outcome.status, resumed.outcome.steps_done) == ("completed", 12)
    [started] = resumed.of("started")
    assert (started["start_step"], started["total_steps"]) == (4, 12)
    assert [e["step"] for e in resumed.of("step")] == list(range(5, 13))
    # Same optimizer state, data order and dropout draws: the same losses as without the break.
    expected = [e["loss"] for e in lora_job.of("step")[4:]]
    assert [e["loss"] for e in resumed.of("step")] == pytest.approx(expected, rel=1e-4)


def test_full_fine_tuning_trains_every_weight(
    tiny_base: BaseWeights, chat_rows: Path, tmp_path: Path
) -> None:
    hyper = Hyperparameters(epochs=2, learning_rate=1e-2, batch_size=2, max_seq_length=64)
    job = train(tiny_spec(tiny_base, chat_rows, tmp_path, "sft", hyper=hyper, checkpoint_every=0))
    assert job.outcome.status == "completed" and job.of("checkpoint") == []
    [started] = job.of("started")
    assert started["trainable_params"] > 40_000
    assert {"config.json", "model.safetensors"} <= _files(job.outcome.final_dir or "")
    assert {Path(n).suffix for n in _files(job.outcome.final_dir or "")} == ONLY_WEIGHTS
    losses = [e["loss"] for e in job.of("step")]
    assert losses[-1] < losses[0] - 0.3


def test_a_stop_request_ends_the_job_between_steps(
    tiny_base: BaseWeights, chat_rows: Path, tmp_path: Path
) -> None:
    long = Hyperparameters(epochs=500, learning_rate=1e-3, batch_size=2, max_seq_length=64)
    job = train(
        tiny_spec(tiny_base, chat_rows, tmp_path, hyper=long, checkpoint_every=1000),
        should_stop=lambda events: any(e["event"] == "step" for e in events),
    )
    assert (job.outcome.status, job.outcome.error) == ("cancelled", "")
    [cancelled] = job.of("cancelled")
    steps = job.of("step")
    assert 1 <= cancelled["step"] == steps[-1]["step"] == job.outcome.steps_done < 2000
    # A job that takes checkpoints leaves one where it stopped, to be resumed from.
    [checkpoint] = job.of("checkpoint")
    assert checkpoint["step"] == cancelled["step"] and Path(checkpoint["dir"]).is_dir()


def test_a_memory_limit_too_small_fails_with_a_memory_message(
    tiny_base: BaseWeights, chat_rows: Path, tmp_path: Path
) -> None:
    job = train(tiny_spec(tiny_base, chat_rows, tmp_path), memory_limit_bytes=200 * 2**20)
    assert job.outcome.status == "failed"
    assert "ran out of memory" in job.outcome.error and "0.20 GiB" in job.outcome.error
    assert "Traceback" not in job.outcome.error


def test_a_job_past_its_time_is_killed(
    tiny_base: BaseWeights, chat_rows: Path, tmp_path: Path
) -> None:
    started = time.monotonic()
    job = train(tiny_spec(tiny_base, chat_rows, tmp_path), timeout_s=1.5)
    # Stopped by the deployment's cap, not failed: its steps are charged as a cancel's are.
    assert job.outcome.status == "timed_out"
    assert job.outcome.error == (
        f"stopped at the deployment's time cap of 2 s after {job.outcome.steps_done} steps"
    )
    assert time.monotonic() - started < 10


_PARENT = """
import json, sys
from benchgen.training.process import run_training
from benchgen.training.spec import TrainSpec
spec = TrainSpec.from_json(open(sys.argv[1]).read())
run_training(spec, lambda e: print(json.dumps(e), flush=True), lambda: False, None, 600)
"""


def _gone(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return True
    return "\nState:\tZ" in status  # dead, waiting only to be reaped by init


def test_the_training_process_dies_with_its_parent(
    tiny_base: BaseWeights, chat_rows: Path, tmp_path: Path
) -> None:
    long = Hyperparameters(epochs=5000, learning_rate=1e-3, batch_size=2, max_seq_length=64)
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(tiny_spec(tiny_base, chat_rows, tmp_path / "out", hyper=long).to_json())
    parent = subprocess.Popen(  # noqa: S603 - this interpreter, a fixed script
        [sys.executable, "-c", _PARENT, str(spec_path)], stdout=subprocess.PIPE, text=True
    )
    assert parent.stdout is not None
    try:
        child_pid = next(json.loads(line)["pid"] for line in parent.stdout if '"started"' in line)
    finally:
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait()
    deadline = time.monotonic() + 10
    while not _gone(child_pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _gone(child_pid)
