"""Huge replies from a model or a judge: clipped to the deployment's cap before they are scored
and stored, the answer at their end still found, the run's tokens still counted."""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Iterator

import pytest

from benchgen.core.context import Principal
from benchgen.evals.scorers.extract import extract_choice, extract_final_answer
from benchgen.jobs.worker import Worker
from benchgen.services._artifacts import store_for
from benchgen.services.benchmarks import bundles, judges
from benchgen.services.runs import launch, results
from benchgen.services.runs._replies import CUT_MARK, clip_reply
from benchgen.services.runtime import Runtime
from tests.bundle_factory import bundle, require_sandbox
from tests.evals.stub_openai import Fault, StubOpenAI
from tests.services.test_judge import stub_model
from tests.services.test_runs import work_all
from tests.support import World, stub_reply

CAP = 65536  # the documented default of `max_reply_chars`
MARKER_ROOM = 100  # the cut marker's own characters
# Over 3 MB of reasoning before the answer, as a long-winded (or hostile) endpoint might send.
THINKING = "Let me think about this step by step. Answer: maybe Paris? No.\n" * 50_000
CAPITALS = {
    "title": "Capitals",
    "format": "qa",
    "questions": [
        {"prompt": "What is the capital of Italy?", "answer": "Rome"},
        {"prompt": "What is the capital of Peru?", "answer": "Lima"},
    ],
}


def test_a_short_reply_is_kept_whole() -> None:
    assert clip_reply("ANSWER: B", 1024) == "ANSWER: B"
    assert clip_reply("x" * 1024, 1024) == "x" * 1024


def test_a_long_reply_keeps_its_head_and_its_final_answer() -> None:
    reply = "I begin here.\n" + THINKING + "So the answer is the second.\nANSWER: B"
    clipped = clip_reply(reply, CAP)
    assert len(clipped) <= CAP + MARKER_ROOM
    assert clipped.startswith("I begin here.\n") and clipped.endswith("ANSWER: B")
    assert f"{CUT_MARK} {len(reply) - CAP:,} characters" in clipped
    assert extract_choice(clipped, 4) == extract_choice(reply, 4) == "B"
    assert extract_final_answer(clipped) == "B"


def test_a_line_cut_in_two_never_reads_as_a_fresh_answer_line() -> None:
    # The tail (the last 768 of 1024 characters) starts inside "My answer: C": on a line of its
    # own, "answer: C" would read as the final answer the reply never gave.
    tail = "answer: C\n" + "z" * 758
    reply = "q" * 5000 + "My " + tail
    clipped = clip_reply(reply, 1024)
    assert clipped.endswith(tail)
    assert extract_final_answer(clipped) != "C"
    assert extract_final_answer(clip_reply("x" * 5000 + "\nANSWER: D", 1024)) == "D"


@pytest.fixture
def stub(runtime: Runtime) -> Iterator[StubOpenAI]:
    runtime.settings = runtime.settings.model_copy(update={"model_host_allowlist": "127.0.0.1"})
    with StubOpenAI() as server:
        yield server


def _huge(_: int, prompt: str) -> Fault:
    if "VERDICT" in prompt:  # the judge's grading prompt: a huge verdict, correct at its end
        return stub_reply(THINKING + "VERDICT: CORRECT")
    return stub_reply(THINKING + ("ANSWER: Rome" if "Italy" in prompt else "ANSWER: Cusco"))


@pytest.mark.both_backends
def test_a_run_of_huge_replies_stores_them_clipped_and_scores_their_end(
    world: World, runtime: Runtime, stub: StubOpenAI
) -> None:
    stub.fail = _huge
    ana = world.user("ana@example.com")
    bm = world.benchmark(ana, CAPITALS)
    web = Principal.web(ana)
    options = {"settings": {"samples": 2, "seed": 1}}
    run_id = world.do(web, launch.start_run, bm, stub_model(world, stub), None, options).id
    while Worker(runtime).run_once():
        pass
    run = world.do(web, launch.get_run, run_id)
    assert run.status == "completed"
    rows = world.do(web, results.list_results, run_id)
    assert [row["outcome"] for row in rows] == ["correct", "wrong"]
    assert [row["extracted"] for row in rows] == ["Rome", "Cusco"]
    replies = [row["raw"] for row in rows] + [s["raw"] for row in rows for s in row["samples"]]
    assert len(replies) == 4
    assert all(CAP < len(raw) <= CAP + MARKER_ROOM and CUT_MARK in raw for raw in replies)
    # The tokens and latency are the endpoint's and the clock's, whatever was cut.
    assert (run.input_tokens, run.output_tokens) == (4 * 9, 4 * 4)
    assert all(row["output_tokens"] == 4 and row["latency_ms"] is not None for row in rows)


def test_a_huge_judge_reply_is_clipped_and_its_final_verdict_read(
    world: World, runtime: Runtime, stub: StubOpenAI
) -> None:
    stub.fail = _huge
    ana = world.user("ana@example.com")
    bm = world.benchmark(ana, {**CAPITALS, "questions": CAPITALS["questions"][:1]})
    web = Principal.web(ana)
    world.do(web, judges.set_judge, bm, "openai_compat", "judge-1", stub.base_url, None)
    run_id = world.do(web, launch.start_run, bm, stub_model(world, stub)).id
    while Worker(runtime).run_once():
        pass
    [row] = world.do(web, results.list_results, run_id)
    assert row["outcome"] == "correct"
    assert len(row["reasoning"]) <= CAP + MARKER_ROOM
    assert row["reasoning"].endswith("VERDICT: CORRECT") and CUT_MARK in row["reasoning"]


def test_the_cap_is_the_deployments_setting(
    world: World, runtime: Runtime, stub: StubOpenAI
) -> None:
    runtime.settings = runtime.settings.model_copy(update={"max_reply_chars": 2048})
    stub.fail = _huge
    ana = world.user("ana@example.com")
    bm = world.benchmark(ana, {**CAPITALS, "questions": CAPITALS["questions"][:1]})
    run_id = world.do(Principal.web(ana), launch.start_run, bm, stub_model(world, stub)).id
    while Worker(runtime).run_once():
        pass
    [row] = world.do(Principal.web(ana), results.list_results, run_id)
    assert 2048 < len(row["raw"]) <= 2048 + MARKER_ROOM and row["raw"].endswith("ANSWER: Rome")
    assert row["outcome"] == "correct"


def test_a_custom_benchmarks_predictions_hold_the_clipped_replies(
    world: World, runtime: Runtime, stub: StubOpenAI
) -> None:
    require_sandbox()
    stub.fail = lambda _, prompt: stub_reply(THINKING + f"ANSWER: {prompt}")
    ana = world.user("ana@example.com", credits_=100)
    bm = world.do(Principal.web(ana), bundles.upload_bundle, bundle(), "tiny.zip").benchmark.id
    run_id = world.do(Principal.web(ana), launch.start_run, bm, stub_model(world, stub)).id
    work_all(runtime)
    assert world.do(Principal.web(ana), launch.get_run, run_id).status == "completed"
    saved = store_for(runtime.settings).read_bytes(f"runs/{run_id}/predictions/task-0.zip")
    with zipfile.ZipFile(io.BytesIO(saved)) as kept:
        rows = [json.loads(line) for line in kept.read("predictions.jsonl").splitlines()]
    predictions = [row["prediction"] for row in rows]
    assert predictions[0].endswith("ANSWER: paris")
    assert all(len(p) <= CAP + MARKER_ROOM and CUT_MARK in p for p in predictions)
