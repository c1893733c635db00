"""Exports run unchanged in the peer tools: Inspect AI and lm-evaluation-harness, from the
peers' own environment (bench/.peers-venv), score the same stub as BenchGen does."""

from __future__ import annotations

import io
import json
import os
import subprocess
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from benchgen.core.context import Principal
from benchgen.services.benchmarks import exports
from benchgen.services.runs import launch
from benchgen.services.runtime import Runtime
from tests.evals.stub_openai import Fault, StubOpenAI, stub_letter
from tests.services.test_runs import priced_model, work_all
from tests.support import World

PEERS = Path(__file__).resolve().parents[2] / "bench" / ".peers-venv" / "bin"
# The peers are never installed by the test suite: `bench/run_throughput.py --setup-peers` does.
pytestmark = pytest.mark.skipif(
    not (PEERS / "inspect").exists() or not (PEERS / "lm_eval").exists(),
    reason=f"no peers' environment at {PEERS}; run bench/run_throughput.py --setup-peers",
)
MCQ = {
    "title": "Peers mcq",
    "format": "mcq",
    "questions": [
        {
            "prompt": f"Question {i}?",
            "choices": [f"red {i}", f"green {i}", f"blue {i}"],
            "answer": "ABC"[i % 3],
        }
        for i in range(12)
    ],
}
QA = {
    "title": "Peers qa",
    "format": "qa",
    "questions": [
        {"prompt": f"Say {i}?", "answer": "stub" if i % 3 else "other"} for i in range(9)
    ],
}


def _full_usage(number: int, prompt: str) -> Fault:
    """The stub's own reply, with the `total_tokens` Inspect's OpenAI client requires."""
    text = f"Thinking it over.\nANSWER: {stub_letter(prompt) or 'stub'}"
    return Fault.completion(text, number=number)


@pytest.fixture
def stub() -> Iterator[StubOpenAI]:
    with StubOpenAI(latency_s=0.001, fail=_full_usage) as server:
        yield server


def _env(workdir: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        OPENAI_API_KEY="dummy",
        HF_HUB_OFFLINE="1",
        HF_DATASETS_OFFLINE="1",
        HF_HOME=str(workdir / "hf"),
        INSPECT_DISPLAY="none",
        NO_COLOR="1",
    )
    return env


def _run(command: list[str], cwd: Path) -> None:
    # An argument list (no shell) naming the peers' own programs.
    done = subprocess.run(  # noqa: S603
        command, cwd=cwd, env=_env(cwd), capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, (done.stdout + done.stderr)[-2000:]


def _folder(data: bytes, into: Path) -> Path:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        archive.extractall(into)
        top = archive.namelist()[0].split("/")[0]
    return into / top


def inspect_accuracy(folder: Path, base_url: str) -> float:
    _run(
        [
            str(PEERS / "inspect"),
            "eval",
            "task.py",
            "--model",
            "openai/stub",
            "--model-base-url",
            base_url,
            "-M",
            "responses_api=false",
            "--display",
            "none",
            "--log-dir",
            "logs",
        ],
        folder,
    )
    log = sorted((folder / "logs").glob("*.eval"))[-1]
    dump = subprocess.run(  # noqa: S603
        [str(PEERS / "inspect"), "log", "dump", "--header-only", str(log)],
        capture_output=True,
        text=True,
        check=True,
        env=_env(folder),
    )
    header = json.loads(dump.stdout)
    assert header["status"] == "success", header.get("error")
    return float(header["results"]["scores"][0]["metrics"]["accuracy"]["value"])


def lm_eval_accuracy(folder: Path, base_url: str, task: str) -> float:
    model_args = (
        f"base_url={base_url}/chat/completions,model=stub,num_concurrent=4,"
        "max_retries=1,tokenized_requests=False,tokenizer_backend=None"
    )
    _run(
        [
            str(PEERS / "lm_eval"),
            "--model",
            "local-chat-completions",
            "--model_args",
            model_args,
            "--apply_chat_template",
            "--tasks",
            task,
            "--include_path",
            ".",
            "--output_path",
            "out",
        ],
        folder,
    )
    results = json.loads(sorted((folder / "out").rglob("results_*.json"))[-1].read_text())
    return float(results["results"][task]["exact_match,final_answer"])


@pytest.mark.parametrize("spec", [MCQ, QA], ids=["mcq", "qa"])
def test_exports_score_as_benchgen_does(
    world: World, runtime: Runtime, stub: StubOpenAI, tmp_path: Path, spec: dict[str, Any]
) -> None:
    runtime.settings = runtime.settings.model_copy(update={"model_host_allowlist": "127.0.0.1"})
    ana = world.user("ana@example.com", credits_=1000)
    bm = world.benchmark(ana, spec)
    web = Principal.web(ana)
    run = world.do(web, launch.start_run, bm, priced_model(world, stub, per_question=0))
    work_all(runtime)
    benchgen = world.do(web, launch.get_run, run.id).summary["accuracy"]
    assert 0 < benchgen < 1  # some right, some wrong: agreement is not by chance
    inspect = _folder(world.do(web, exports.export_benchmark, bm, "inspect").data, tmp_path / "i")
    lm_eval = _folder(world.do(web, exports.export_benchmark, bm, "lm_eval").data, tmp_path / "l")
    assert inspect_accuracy(inspect, stub.base_url) == pytest.approx(benchgen)
    task = exports.task_name(bm)
    assert lm_eval_accuracy(lm_eval, stub.base_url, task) == pytest.approx(benchgen)
