"""The AI judge: owner-only setup, who may use it, verdicts from a stub judge, tokens apart."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from benchgen.core.context import Principal
from benchgen.core.errors import Conflict, InvalidInput, NotFound, PermissionDenied
from benchgen.core.permissions import PrincipalKind
from benchgen.evals.types import Answer
from benchgen.jobs.worker import Worker
from benchgen.services import models
from benchgen.services.benchmarks import judges, lifecycle, members
from benchgen.services.runs import launch, results
from benchgen.services.runtime import Runtime
from tests.evals.stub_openai import Fault, StubOpenAI
from tests.support import MCQ, OPERATOR, World, stub_reply

CAPITALS = {
    "title": "Capitals",
    "format": "qa",
    "questions": [
        {"prompt": "What is the capital of Italy?", "answer": "Rome"},
        {"prompt": "What is the capital of Spain?", "answer": "Madrid"},
        {"prompt": "What is the capital of Peru?", "answer": "Lima"},
    ],
}


def _endpoint(_: int, prompt: str) -> Fault:
    """Both the evaluated model and the judge live behind this stub."""
    if "VERDICT" in prompt:  # the grading prompt
        answer = prompt.split("<answer>")[-1]
        return stub_reply(
            "Reasoning.\nVERDICT: CORRECT"
            if "Roma" in answer or "Madrid" in answer
            else "VERDICT: INCORRECT"
        )
    replies = {"Italy": "ANSWER: Roma", "Spain": "ANSWER: Madrid", "Peru": "I don't know"}
    return stub_reply(next(text for country, text in replies.items() if country in prompt))


@pytest.fixture
def stub(runtime: Runtime) -> Iterator[StubOpenAI]:
    runtime.settings = runtime.settings.model_copy(update={"model_host_allowlist": "127.0.0.1"})
    with StubOpenAI(fail=_endpoint) as server:
        yield server


def stub_model(world: World, stub: StubOpenAI) -> str:
    """A platform model answered by `stub`."""
    spec = {
        "name": "Stub",
        "kind": "openai_compat",
        "endpoint_model": "m",
        "base_url": stub.base_url,
    }
    return world.do(OPERATOR, models.create_platform_model, spec).id


@pytest.mark.both_backends
def test_judge_scores_a_run_and_keeps_its_tokens_apart(
    world: World, runtime: Runtime, stub: StubOpenAI
) -> None:
    ana = world.user("ana@example.com")
    bm = world.benchmark(ana, CAPITALS)
    web = Principal.web(ana)
    world.do(web, judges.set_judge, bm, "openai_compat", "judge-1", stub.base_url, "sk-judge-key")
    run_id = world.do(web, launch.start_run, bm, stub_model(world, stub)).id
    while Worker(runtime).run_once():
        pass
    run = world.do(web, launch.get_run, run_id)
    assert run.status == "completed"
    rows = world.do(web, results.list_results, run_id)
    # Exact match would call "Roma" wrong; the judge accepts it and rejects "I don't know".
    assert [row["outcome"] for row in rows] == ["correct", "correct", "wrong"]
    assert "VERDICT: CORRECT" in rows[0]["reasoning"]
    assert run.summary["accuracy"] == pytest.approx(2 / 3)
    assert (run.judge_input_tokens, run.judge_output_tokens) == (27, 12)
    assert (run.input_tokens, run.output_tokens) == (27, 12)
    assert sum(1 for prompt in stub.received if "VERDICT" in prompt) == 3


def test_unreadable_verdict_is_an_error_not_a_guess(
    world: World, runtime: Runtime, stub: StubOpenAI
) -> None:
    ana = world.user("ana@example.com")
    bm = world.benchmark(ana, {**CAPITALS, "questions": CAPITALS["questions"][:1]})
    web = Principal.web(ana)
    world.do(web, judges.set_judge, bm, "openai_compat", "judge-1", stub.base_url, None)
    stub.fail = lambda n, p: (
        stub_reply("no verdict here") if "VERDICT" in p else stub_reply("ANSWER: Rome")
    )
    run_id = world.do(web, launch.start_run, bm, stub_model(world, stub)).id
    while Worker(runtime).run_once():
        pass
    [row] = world.do(web, results.list_results, run_id)
    assert row["outcome"] == "error" and "unreadable judge verdict" in row["reasoning"]


def test_only_the_owner_sets_a_judge_and_only_in_the_web_app(
    world: World, stub: StubOpenAI
) -> None:
    ana, bob = world.user("ana@example.com"), world.user("bob@example.com")
    bm = world.benchmark(ana, CAPITALS)
    args = ("openai_compat", "judge-1", stub.base_url, "sk-x")
    for door in (PrincipalKind.API, PrincipalKind.AGENT):
        with pytest.raises(PermissionDenied) as refused:
            world.do(world.principal(door, ana), judges.set_judge, bm, *args)
        assert refused.value.details["page"] == f"/benchmarks/{bm}/settings/judge"
    with pytest.raises(NotFound):
        world.do(Principal.web(bob), judges.set_judge, bm, *args)
    with pytest.raises(InvalidInput):
        world.do(
            Principal.web(ana),
            judges.set_judge,
            bm,
            "openai_compat",
            "j",
            "http://10.1.1.1/v1",
            None,
        )
    mcq = world.benchmark(ana, MCQ)
    with pytest.raises(InvalidInput):
        world.do(Principal.web(ana), judges.set_judge, mcq, *args)
    view = world.do(Principal.web(ana), judges.set_judge, bm, *args)
    assert view.has_api_key and not view.allow_others


def test_a_judge_key_no_request_header_carries_is_refused_and_a_paste_is_trimmed(
    world: World, stub: StubOpenAI
) -> None:
    ana = world.user("ana@example.com")
    bm = world.benchmark(ana, CAPITALS)
    web = Principal.web(ana)
    for bad in ("sk-\u200bjudge", "sk-jüdge", "sk judge", "sk-a\nb"):
        with pytest.raises(InvalidInput) as refused:
            world.do(web, judges.set_judge, bm, "openai_compat", "judge-1", stub.base_url, bad)
        assert refused.value.errors[0]["loc"] == ["api_key"]
        assert bad not in str(refused.value)
    view = world.do(web, judges.set_judge, bm, "openai_compat", "j", stub.base_url, " sk-ok\n")
    assert view.has_api_key


def test_others_use_the_judge_only_when_the_owner_allows(world: World, stub: StubOpenAI) -> None:
    ana, pia = world.user("ana@example.com"), world.user("pia@example.com")
    bm = world.benchmark(ana, CAPITALS)
    web = Principal.web(ana)
    world.do(web, judges.set_judge, bm, "openai_compat", "judge-1", stub.base_url, None)
    world.do(web, lifecycle.publish_benchmark, bm)
    world.do(Principal.web(pia), members.join_benchmark, bm, True)
    model = stub_model(world, stub)
    for refused in (launch.estimate_run, launch.start_run):  # the estimate says so first
        with pytest.raises(PermissionDenied, match="not open"):
            world.do(Principal.web(pia), refused, bm, model)
    world.do(web, judges.set_judge, bm, "openai_compat", "judge-1", stub.base_url, None, True)
    assert world.do(Principal.web(pia), launch.start_run, bm, model).status == "queued"


def test_logprob_scoring_needs_a_local_model(world: World) -> None:
    from benchgen.services.benchmarks import scoring

    ana = world.user("ana@example.com")
    bm = world.benchmark(ana, MCQ)
    world.do(Principal.web(ana), scoring.set_scoring, bm, {"method": "choice_logprob"})
    for refused in (launch.estimate_run, launch.start_run):
        with pytest.raises(Conflict, match="needs a local model"):
            world.do(Principal.web(ana), refused, bm, "mdl_builtin_first")


def test_answer_type_is_what_the_engine_hands_over() -> None:
    assert Answer(0, "p", "r", None, 1, 1, 1, 1).letter_logprobs is None
