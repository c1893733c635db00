"""The agent's read-only insight tools with a scripted brain: comparing two runs and explaining
one item, each cut to what the user may see, refusals as readable results, nothing changed."""

from __future__ import annotations

from benchgen.core.context import Principal
from benchgen.services.benchmarks import lifecycle
from benchgen.services.runs import compare
from tests.agent.scripted import Script, new_conversation, say
from tests.services.test_compare import FIRST, RANDOM, TWELVE, finished
from tests.support import MCQ, World


def test_the_agent_compares_two_runs_for_the_owner(world: World, ana: str, api: Principal) -> None:
    benchmark = world.benchmark(ana, TWELVE)
    run_a = finished(world, world.rt, ana, benchmark, FIRST)
    run_b = finished(world, world.rt, ana, benchmark, RANDOM)
    expected = world.do(Principal.web(ana), compare.compare_runs, run_a, run_b)
    conv = new_conversation(world.rt, api)
    script = Script([[("compare_runs", {"run_a": run_a, "run_b": run_b})], "compared"])
    turn = say(world.rt, api, conv, script.brain(), "compare my last two runs")
    assert turn.status == "completed", turn.reply
    call = next(c for c in turn.tool_calls if c["tool"] == "compare_runs")
    assert call["ok"], call
    shown = script.seen[-1]
    assert f"'p_value': {expected.p_value}" in shown
    assert f"'changed_items_total': {expected.only_a + expected.only_b}" in shown
    assert "'tags': [" in shown and "'items'" not in shown


def test_a_stranger_is_told_no_comparison(world: World) -> None:
    owner = world.user("owner@example.com")
    benchmark = world.benchmark(owner, TWELVE)
    world.do(Principal.web(owner), lifecycle.publish_benchmark, benchmark)
    bob = world.user("bob@example.com", credits_=100)
    run_a = finished(world, world.rt, bob, benchmark, FIRST)
    run_b = finished(world, world.rt, bob, benchmark, RANDOM)
    api = world.api(world.token(bob, ["read"]))
    script = Script([[("compare_runs", {"run_a": run_a, "run_b": run_b})], "ok"])
    say(world.rt, api, new_conversation(world.rt, api), script.brain(), "compare")
    shown = script.seen[-1]
    assert "owner and collaborators compare runs" in shown
    assert "p_value" not in shown and "Question 1" not in shown


def test_runs_that_do_not_compare_are_a_readable_refusal(
    world: World, ana: str, api: Principal
) -> None:
    run_a = finished(world, world.rt, ana, world.benchmark(ana, TWELVE), FIRST)
    run_b = finished(world, world.rt, ana, world.benchmark(ana, MCQ), FIRST)
    script = Script([[("compare_runs", {"run_a": run_a, "run_b": run_b})], "sorry"])
    turn = say(world.rt, api, new_conversation(world.rt, api), script.brain(), "compare")
    call = next(c for c in turn.tool_calls if c["tool"] == "compare_runs")
    assert not call["ok"] and call["error"] == "invalid_input"
    assert "different benchmarks" in script.seen[-1]


def test_the_agent_explains_why_an_item_was_wrong(world: World, ana: str, api: Principal) -> None:
    run = finished(world, world.rt, ana, world.benchmark(ana, TWELVE), FIRST)
    script = Script([[("explain_result", {"run_id": run, "position": 1})], "explained"])
    turn = say(world.rt, api, new_conversation(world.rt, api), script.brain(), "why was q2 wrong?")
    call = next(c for c in turn.tool_calls if c["tool"] == "explain_result")
    assert call["ok"], call
    shown = script.seen[-1]
    for needed in ("'outcome': 'wrong'", "'expected': ['B']", "'reply': 'ANSWER: A'"):
        assert needed in shown, needed


def test_explain_refuses_what_the_user_may_not_see(world: World, ana: str, api: Principal) -> None:
    other = world.user("other@example.com")
    theirs = finished(world, world.rt, other, world.benchmark(other, TWELVE), FIRST)
    mine = finished(world, world.rt, ana, world.benchmark(ana, TWELVE), FIRST)
    steps = [
        [("explain_result", {"run_id": theirs, "position": 0})],
        [("explain_result", {"run_id": mine, "position": 99})],
        [("explain_result", {"run_id": mine, "position": -1})],
        "done",
    ]
    script = Script(steps)
    turn = say(world.rt, api, new_conversation(world.rt, api), script.brain(), "explain")
    calls = [c for c in turn.tool_calls if c["tool"] == "explain_result"]
    assert [c.get("error") for c in calls[:2]] == ["not_found", "invalid_input"]
    assert "Question 0" not in "".join(script.seen)  # nothing of the other user's run
