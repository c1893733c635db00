"""Generation settings per run: ranges, providers that refuse a setting at the estimate, the
estimate's samples and few-shot prompt length, the record on the run, few-shot access, the cap."""

from __future__ import annotations

import json

import pytest

from benchgen.core.context import Principal
from benchgen.core.errors import Conflict, InvalidInput
from benchgen.services import models
from benchgen.services.benchmarks import lifecycle
from benchgen.services.chat import proposals
from benchgen.services.runs import launch, leaderboards, rescoring, results
from benchgen.services.runs.settings import RunOptions, RunSettings, check_supported, describe
from benchgen.services.runtime import Runtime
from benchgen.services.specs import parse
from tests.services import test_runs
from tests.services.test_proposals import agent, approve, propose
from tests.services.test_runs import (
    BIG_MCQ,
    FIRST,
    priced_model,
    work_all,
)
from tests.support import MCQ, World, export_whole

open_loopback = test_runs.open_loopback  # a fixture shared with the runs tests
stub = test_runs.stub  # a fixture shared with the runs tests

RANDOM = "mdl_builtin_random"
ECHO = "mdl_builtin_echo"


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("temperature", 2.5),
        ("temperature", -0.1),
        ("top_p", 0),
        ("top_p", 1.5),
        ("max_tokens", 0),
        ("max_tokens", 40000),
        ("stop", ["a", "b", "c", "d", "e"]),
        ("stop", ["x" * 101]),
        ("stop", [""]),
        ("system_prompt", "y" * 4001),
        ("system_prompt", "hidden \u202e text"),
        ("few_shot", 11),
        ("chain_of_thought", "free text of my own"),
        ("seed", -1),
        ("samples", 0),
        ("samples", 21),
        ("surprise", 1),
    ],
)
def test_out_of_range_settings_are_refused_with_their_place(field: str, value: object) -> None:
    with pytest.raises(InvalidInput) as refused:
        parse(RunOptions, {"settings": {field: value}})
    assert refused.value.errors[0]["loc"][:2] == ["settings", field]


def test_defaults_change_nothing_and_describe_says_what_differs() -> None:
    assert RunSettings().model_dump()["samples"] == 1
    assert describe(RunSettings().model_dump()) == ""
    text = describe({"temperature": 0.7, "samples": 5, "few_shot": 2, "stop": ["\n"]})
    assert text == "temperature 0.7, 1 stop sequence(s), 2-shot, 5 samples per question"
    chosen = {"stop": ["\n", " "], "system_prompt": 'Say "A".'}
    assert describe(chosen) == "2 stop sequence(s), a system prompt of 8 characters"
    assert describe(chosen, whole=True) == 'stop sequences "\\n", " ", system prompt "Say \\"A\\"."'
    # A tag holding a comma is quoted: ["a, b"] read as the two tags a and b.
    one = describe({"subset": {"kind": "tags", "tags": ["a, b"]}})
    two = describe({"subset": {"kind": "tags", "tags": ["a", "b"]}})
    assert (one, two) == ('subset: questions tagged "a, b"', "subset: questions tagged a, b")


def user_model(world: World, user: str, kind: str, url: str = "") -> str:
    spec = {"name": f"My {kind}", "kind": kind, "endpoint_model": "m", "api_key": "sk-x" * 8}
    if kind == "openai_compat":
        spec["base_url"] = url
    return world.do(Principal.web(user), models.create_model, spec).id


@pytest.mark.parametrize(
    ("model", "given", "field"),
    [
        (FIRST, {"top_p": 0.9}, "top_p"),
        (FIRST, {"temperature": 0.5}, "temperature"),
        (FIRST, {"seed": 3}, "seed"),  # only the random baseline reads a seed
        (RANDOM, {"stop": ["x"]}, "stop"),
        (RANDOM, {"max_tokens": 10}, "max_tokens"),
        ("anthropic", {"seed": 1}, "seed"),
        ("anthropic", {"temperature": 1.5}, "temperature"),
    ],
)
def test_a_provider_refuses_what_it_cannot_honour_at_the_estimate(
    world: World, model: str, given: dict[str, object], field: str
) -> None:
    ana = world.user("ana@example.com")
    bm = world.benchmark(ana, MCQ)
    if model == "anthropic":
        model = user_model(world, ana, "anthropic")
    with pytest.raises(InvalidInput) as refused:
        world.do(Principal.web(ana), launch.estimate_run, bm, model, {"settings": given})
    assert refused.value.errors[0]["loc"] == ["settings", field]
    with pytest.raises(InvalidInput):
        world.do(Principal.web(ana), launch.start_run, bm, model, None, {"settings": given})


def test_hosted_models_take_every_setting(
    world: World,
    open_loopback: Runtime,
    stub,
) -> None:
    ana = world.user("ana@example.com")
    bm = world.benchmark(ana, MCQ)
    model = user_model(world, ana, "openai_compat", stub.base_url)
    every = {
        "temperature": 1.2,
        "top_p": 0.9,
        "max_tokens": 64,
        "stop": ["\n\n"],
        "system_prompt": "You are careful.",
        "chain_of_thought": "step_by_step",
        "seed": 7,
        "samples": 3,
    }
    estimate = world.do(Principal.web(ana), launch.estimate_run, bm, model, {"settings": every})
    assert "temperature 1.2" in estimate.settings and "3 samples" in estimate.settings


def test_the_estimate_multiplies_by_samples_and_counts_few_shot(
    world: World,
    open_loopback: Runtime,
    stub,
) -> None:
    ana = world.user("ana@example.com")
    bm = world.benchmark(ana, BIG_MCQ)
    model = priced_model(world, stub, per_question=2, per_1k=1)
    web = Principal.web(ana)
    one = world.do(web, launch.estimate_run, bm, model)
    five = world.do(web, launch.estimate_run, bm, model, {"settings": {"samples": 5}})
    assert five.question_count == 12 and five.credits >= 5 * 24 and five.credits > one.credits
    assert "12 questions × 5 samples × 2 credits + up to " in five.basis
    assert five.basis.endswith(" tokens × 1 credit per 1k tokens")  # every amount says its unit
    shots = world.do(web, launch.estimate_run, bm, model, {"settings": {"few_shot": 3}})
    assert shots.question_count == 9  # the examples are shown, not scored
    plain_tokens = int(one.basis.split("up to ")[1].split(" ")[0])
    shot_tokens = int(shots.basis.split("up to ")[1].split(" ")[0])
    # Nine prompts each carrying three examples outweigh the three questions left out.
    assert shot_tokens - 9 * 16 > plain_tokens - 12 * 16


def test_settings_are_recorded_and_samples_give_pass_at_k(world: World, runtime: Runtime) -> None:
    ana = world.user("ana@example.com")
    bm = world.benchmark(ana, BIG_MCQ)
    web = Principal.web(ana)
    options = {"settings": {"samples": 4, "seed": 11, "system_prompt": "Be brief."}}
    run = world.do(web, launch.start_run, bm, RANDOM, None, options)
    assert run.settings["samples"] == 4 and run.settings["prompt_version"] >= 1
    assert not run.partial
    work_all(runtime)
    done = world.do(web, launch.get_run, run.id)
    sampling = done.summary["sampling"]
    assert sampling["samples"] == 4 and sampling["questions"] == 12
    assert set(sampling["pass_at_k"]) == {"1", "2", "4"}
    assert 0 <= sampling["pass_at_k"]["1"] <= sampling["pass_at_k"]["4"] <= 1
    assert 0 <= sampling["majority_accuracy"] <= 1
    assert done.done_count == 12 and done.cost == 0
    # The random baseline's samples differ: some question got more than one distinct answer.
    assert sampling["pass_at_k"]["4"] > sampling["pass_at_k"]["1"]

    # On the leaderboard with its settings shown.
    world.do(web, leaderboards.add_to_leaderboard, run.id)
    row = world.do(web, leaderboards.get_leaderboard, bm).rows[0]
    assert "4 samples per question" in row.settings and "seed 11" in row.settings


def test_a_rescore_preview_shows_the_figures_over_samples_it_would_store(
    world: World, runtime: Runtime
) -> None:
    """The preview left pass@k and majority vote out: it could not prove a fix to them."""
    ana, sam = world.user("ana@example.com"), world.user("sam@example.com")
    bm = world.benchmark(ana, BIG_MCQ)
    world.do(Principal.web(ana), lifecycle.publish_benchmark, bm)
    options = {"settings": {"samples": 4, "seed": 11}}
    run = world.do(Principal.web(sam), launch.start_run, bm, RANDOM, None, options).id
    work_all(runtime)
    owner = Principal.web(ana)
    stored = world.do(owner, launch.get_run, run).summary["sampling"]
    preview = world.do(owner, rescoring.rescore_run, run, {"method": "choice"})
    assert preview.before["sampling"] == preview.after["sampling"] == stored
    applied = world.do(owner, rescoring.rescore_run, run, {"method": "choice"}, True)
    assert applied.after["sampling"] == stored
    theirs = world.do(Principal.web(sam), rescoring.rescore_run, run)
    assert "sampling" not in theirs.before and "sampling" not in theirs.after


def test_the_jsonl_export_holds_every_sample_of_a_question(world: World, runtime: Runtime) -> None:
    """Samples 2 and up were paid for like the first and shown nowhere."""
    ana = world.user("ana@example.com")
    bm = world.benchmark(ana, BIG_MCQ)
    options = {"settings": {"samples": 3, "seed": 11}}
    run = world.do(Principal.web(ana), launch.start_run, bm, RANDOM, None, options).id
    work_all(runtime)
    _, text = world.do(Principal.web(ana), export_whole, run, "jsonl")
    rows = [json.loads(line) for line in text.splitlines()]
    assert len(rows) == 12
    for row in rows:
        assert [s["sample"] for s in row["samples"]] == [1, 2]
        assert all(s["raw"] and s["error"] is None for s in row["samples"])
    single = world.do(Principal.web(ana), launch.start_run, bm, RANDOM).id
    work_all(runtime)
    _, plain = world.do(Principal.web(ana), export_whole, single, "jsonl")
    assert "samples" not in json.loads(plain.splitlines()[0])


def test_an_outsiders_run_shows_no_figures_over_samples(world: World, runtime: Runtime) -> None:
    """pass@k over 20 samples from one's own endpoint tested a guess per sample count: several
    answer-key bits in one run, where the run quota counts on about one."""
    ana, sam = world.user("ana@example.com"), world.user("sam@example.com")
    bm = world.benchmark(ana, BIG_MCQ)
    world.do(Principal.web(ana), lifecycle.publish_benchmark, bm)
    options = {"settings": {"samples": 4, "seed": 11}}
    run = world.do(Principal.web(sam), launch.start_run, bm, RANDOM, None, options)
    work_all(runtime)
    theirs = world.do(Principal.web(sam), launch.get_run, run.id)
    assert not theirs.detail_visible and "sampling" not in theirs.summary
    assert "accuracy" in theirs.summary
    assert "sampling" in world.do(Principal.web(ana), launch.get_run, run.id).summary


def test_few_shot_examples_are_sent_and_never_scored(world: World, runtime: Runtime) -> None:
    ana = world.user("ana@example.com")
    bm = world.benchmark(ana, BIG_MCQ)
    web = Principal.web(ana)
    options = {"settings": {"few_shot": 2, "chain_of_thought": "step_by_step"}}
    run = world.do(web, launch.start_run, bm, ECHO, None, options)
    assert run.question_count == 10 and run.settings["few_shot_positions"] == [0, 1]
    work_all(runtime)
    rows = world.do(web, results.list_results, run.id)
    assert [row["position"] for row in rows] == list(range(2, 12))
    sent = rows[0]["prompt_sent"]
    assert sent.startswith("Example 1:\nQuestion 0: pick one") and "ANSWER: A" in sent
    assert "Think step by step" in sent


def test_strangers_draw_examples_only_from_questions_tagged_example(
    world: World, runtime: Runtime
) -> None:
    ana, sam = world.user("ana@example.com"), world.user("sam@example.com")
    tagged = {**BIG_MCQ, "questions": [dict(q) for q in BIG_MCQ["questions"]]}
    tagged["questions"][5]["tags"] = ["example"]
    bm = world.benchmark(ana, tagged)
    world.do(Principal.web(ana), lifecycle.publish_benchmark, bm)
    stranger = Principal.web(sam)
    with pytest.raises(InvalidInput) as refused:
        world.do(stranger, launch.estimate_run, bm, ECHO, {"settings": {"few_shot": 2}})
    assert "tagged 'example'" in refused.value.message
    run = world.do(stranger, launch.start_run, bm, ECHO, None, {"settings": {"few_shot": 1}})
    assert run.settings["few_shot_positions"] == [5] and run.question_count == 11


def test_a_spending_cap_below_the_estimate_starts_nothing(
    world: World,
    open_loopback: Runtime,
    stub,
) -> None:
    ana = world.user("ana@example.com", credits_=1000)
    bm = world.benchmark(ana, BIG_MCQ)
    model = priced_model(world, stub, per_question=2)
    web = Principal.web(ana)
    estimate = world.do(web, launch.estimate_run, bm, model)
    with pytest.raises(Conflict) as refused:
        world.do(web, launch.start_run, bm, model, None, {"max_credits": estimate.credits - 1})
    assert "above your cap" in refused.value.message
    assert world.do(web, launch.list_runs) == []
    run = world.do(web, launch.start_run, bm, model, None, {"max_credits": estimate.credits})
    assert run.estimated_cost == estimate.credits


@pytest.mark.parametrize("method", ["judge", "choice_logprob"])
def test_judged_and_log_prob_scoring_take_one_sample(method: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        check_supported(RunSettings(samples=2), "openai_compat", "m", "mcq", method)
    assert refused.value.errors[0]["loc"] == ["settings", "samples"]
    check_supported(RunSettings(samples=2), "openai_compat", "m", "mcq", "choice")


def test_custom_benchmarks_take_no_settings() -> None:
    with pytest.raises(InvalidInput):
        check_supported(RunSettings(temperature=1), "openai_compat", "m", "custom", "")


def test_the_agents_run_proposal_shows_and_binds_the_settings(
    world: World, runtime: Runtime
) -> None:
    ana = world.user("ana@example.com")
    bm = world.benchmark(ana, BIG_MCQ)
    turn = agent(world, ana)
    asked = {
        "benchmark_id": bm,
        "model_id": RANDOM,
        "settings": {"samples": 3, "seed": 4},
        "subset": {"kind": "first", "n": 5},
    }
    shown = propose(world, turn, "start_run", asked)
    text = shown.preview["text"]
    assert "5 questions" in text and "3 samples per question" in text and "seed 4" in text
    assert "partial run never goes on a leaderboard" in text
    assert shown.arguments["settings"]["samples"] == 3
    plain = propose(world, turn, "start_run", {"benchmark_id": bm, "model_id": RANDOM})
    assert plain.preview_hash != shown.preview_hash  # the settings are part of what is approved
    approve(world, ana, plain)
    world.do(turn, proposals.execute, plain.id)
    again = propose(world, turn, "start_run", asked)
    approve(world, ana, again)
    done = world.do(turn, proposals.execute, again.id)
    run = world.do(Principal.web(ana), launch.get_run, done.result["run_id"])
    assert run.partial and run.question_count == 5 and run.settings["samples"] == 3
    with pytest.raises(InvalidInput):
        propose(world, turn, "start_run", {**asked, "settings": {"top_p": 0.5}})
