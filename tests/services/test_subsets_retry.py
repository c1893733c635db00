"""Subsets (first N, seeded random N, by tag) are partial and never reach a leaderboard;
retrying a finished run's errors makes a new linked run that leaves the original alone."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from benchgen.core.context import Principal
from benchgen.core.errors import Conflict, InvalidInput, PermissionDenied, RateLimited
from benchgen.db.tables import RunResult
from benchgen.services.benchmarks import lifecycle
from benchgen.services.runs import launch, leaderboards, results, retries
from benchgen.services.runtime import Runtime
from tests.evals.stub_openai import Fault, StubOpenAI
from tests.services import test_runs
from tests.services.test_runs import (
    BIG_MCQ,
    FIRST,
    priced_model,
    work_all,
)
from tests.support import OPERATOR, World

open_loopback = test_runs.open_loopback  # a fixture shared with the runs tests


def asked(world: World, principal: Principal, run_id: str) -> list[int]:
    return [row["position"] for row in world.do(principal, results.list_results, run_id)]


def test_first_n_is_partial_and_refused_by_the_leaderboard(world: World, runtime: Runtime) -> None:
    ana = world.user("ana@example.com")
    bm = world.benchmark(ana, BIG_MCQ)
    web = Principal.web(ana)
    estimate = world.do(web, launch.estimate_run, bm, FIRST, {"subset": {"kind": "first", "n": 3}})
    assert estimate.question_count == 3 and estimate.partial
    run = world.do(web, launch.start_run, bm, FIRST, None, {"subset": {"kind": "first", "n": 3}})
    assert run.partial and run.question_count == 3
    work_all(runtime)
    assert asked(world, web, run.id) == [0, 1, 2]
    with pytest.raises(Conflict) as refused:
        world.do(web, leaderboards.add_to_leaderboard, run.id)
    assert "partial runs cannot be on a leaderboard" in refused.value.message
    assert world.do(web, leaderboards.get_leaderboard, bm).rows == []


def test_a_subset_of_every_question_is_the_whole_benchmark(world: World) -> None:
    ana = world.user("ana@example.com")
    bm = world.benchmark(ana, BIG_MCQ)
    for subset in ({"kind": "first", "n": 500}, {"kind": "random", "n": 12, "seed": 3}):
        estimate = world.do(Principal.web(ana), launch.estimate_run, bm, FIRST, {"subset": subset})
        assert (estimate.question_count, estimate.partial) == (12, False)


def test_a_subset_or_few_shot_that_leaves_nothing_to_ask_is_refused_at_the_estimate(
    world: World,
) -> None:
    ana = world.user("ana@example.com")
    bm = world.benchmark(ana, BIG_MCQ)
    web = Principal.web(ana)
    nothing = {"subset": {"kind": "first", "n": 1}, "settings": {"few_shot": 1}}
    with pytest.raises(InvalidInput, match="few-shot examples take every question") as refused:
        world.do(web, launch.estimate_run, bm, FIRST, nothing)
    assert refused.value.details["errors"][0]["loc"] == ["settings", "few_shot"]
    with pytest.raises(InvalidInput, match="matches the subset"):
        world.do(web, launch.estimate_run, bm, FIRST, {"subset": {"kind": "tags", "tags": ["x"]}})


def test_only_the_team_may_run_part_of_a_published_benchmark(world: World) -> None:
    """A score over one chosen question would be that question's right or wrong: an outsider
    could read the key one free baseline run at a time."""
    ana, sam = world.user("ana@example.com"), world.user("sam@example.com")
    bm = world.benchmark(ana, BIG_MCQ)
    world.do(Principal.web(ana), lifecycle.publish_benchmark, bm)
    one = {"subset": {"kind": "first", "n": 1}}
    for attempt in (launch.estimate_run, launch.start_run):
        args = (bm, FIRST, one) if attempt is launch.estimate_run else (bm, FIRST, None, one)
        with pytest.raises(InvalidInput, match="only the benchmark's owner and collaborators"):
            world.do(Principal.web(sam), attempt, *args)
    assert world.do(Principal.web(sam), launch.start_run, bm, FIRST).question_count == 12
    assert world.do(Principal.web(ana), launch.estimate_run, bm, FIRST, one).question_count == 1


def test_a_seeded_random_subset_is_the_same_questions_again(world: World, runtime: Runtime) -> None:
    ana = world.user("ana@example.com")
    bm = world.benchmark(ana, BIG_MCQ)
    web = Principal.web(ana)
    subset = {"subset": {"kind": "random", "n": 4, "seed": 42}}
    first = world.do(web, launch.start_run, bm, FIRST, None, subset)
    again = world.do(web, launch.start_run, bm, FIRST, None, subset)
    other = world.do(
        web, launch.start_run, bm, FIRST, None, {"subset": {**subset["subset"], "seed": 7}}
    )
    work_all(runtime)
    chosen = asked(world, web, first.id)
    assert len(chosen) == 4 and chosen == asked(world, web, again.id)
    assert chosen != asked(world, web, other.id)


def test_a_tag_subset_asks_only_the_tagged_questions(world: World, runtime: Runtime) -> None:
    ana = world.user("ana@example.com")
    bm = world.benchmark(ana, BIG_MCQ)
    web = Principal.web(ana)
    run = world.do(
        web, launch.start_run, bm, FIRST, None, {"subset": {"kind": "tags", "tags": ["group1"]}}
    )
    work_all(runtime)
    assert asked(world, web, run.id) == [1, 3, 5, 7, 9, 11]
    done = world.do(web, launch.get_run, run.id)
    assert done.summary["n"] == 6
    with pytest.raises(InvalidInput, match="no question of the benchmark matches the subset"):
        world.do(
            web, launch.start_run, bm, FIRST, None, {"subset": {"kind": "tags", "tags": ["none"]}}
        )
    with pytest.raises(InvalidInput):
        world.do(web, launch.start_run, bm, FIRST, None, {"subset": {"kind": "first"}})


def failing_stub() -> StubOpenAI:
    return StubOpenAI(
        fail=lambda n, prompt: (
            Fault.server_error() if "Question 3:" in prompt or "Question 8:" in prompt else None
        )
    )


@pytest.mark.usefixtures("quick_retries")
def test_retry_asks_only_the_errored_questions_as_a_new_linked_run(
    world: World, open_loopback: Runtime
) -> None:
    ana = world.user("ana@example.com", credits_=100)
    bm = world.benchmark(ana, BIG_MCQ)
    web = Principal.web(ana)
    with failing_stub() as stub:
        model = priced_model(world, stub, per_question=2)
        original = world.do(web, launch.start_run, bm, model)
        work_all(open_loopback)
        done = world.do(web, launch.get_run, original.id)
        assert done.error_count == 2 and done.cost == 20
        world.do(web, leaderboards.add_to_leaderboard, original.id)
        stub.fail = None
        retry = world.do(web, retries.retry_errored, original.id)
        assert retry.retry_of == original.id and retry.partial and retry.question_count == 2
        work_all(open_loopback)
    finished = world.do(web, launch.get_run, retry.id)
    assert finished.status == "completed" and finished.error_count == 0 and finished.cost == 4
    assert asked(world, web, retry.id) == [3, 8]
    # The original, on the leaderboard, is untouched.
    again = world.do(web, launch.get_run, original.id)
    assert again.error_count == 2 and again.summary == done.summary and again.cost == 20
    errors = world.ctx_call(
        OPERATOR,
        lambda ctx: list(
            ctx.session.scalars(
                select(RunResult.position).where(
                    RunResult.run_id == original.id, RunResult.error.is_not(None)
                )
            )
        ),
    )
    assert sorted(errors) == [3, 8]
    with pytest.raises(Conflict):
        world.do(web, leaderboards.add_to_leaderboard, retry.id)
    with pytest.raises(Conflict) as nothing:
        world.do(web, retries.retry_errored, retry.id)
    assert "no errored questions" in nothing.value.message


def test_only_the_launcher_retries_and_only_a_finished_run(world: World, runtime: Runtime) -> None:
    ana, col = world.user("ana@example.com"), world.user("col@example.com")
    bm = world.benchmark(ana, BIG_MCQ)
    world.collaborator(ana, bm, "col@example.com")
    run = world.do(Principal.web(ana), launch.start_run, bm, FIRST)
    with pytest.raises(Conflict):
        world.do(Principal.web(ana), retries.retry_errored, run.id)  # still queued
    world.do(Principal.web(col), launch.get_run, run.id)  # the team sees the run…
    with pytest.raises(PermissionDenied):  # …but only its launcher retries it
        world.do(Principal.web(col), retries.retry_errored, run.id)


@pytest.mark.usefixtures("quick_retries")
def test_retries_count_against_a_strangers_quota(world: World, open_loopback: Runtime) -> None:
    ana, sam = world.user("ana@example.com"), world.user("sam@example.com", credits_=100)
    bm = world.benchmark(ana, BIG_MCQ)
    world.do(Principal.web(ana), lifecycle.publish_benchmark, bm)
    stranger = Principal.web(sam)
    with failing_stub() as stub:
        model = priced_model(world, stub, per_question=1)
        first = world.do(stranger, launch.start_run, bm, model)
        work_all(open_loopback)
        for _ in range(4):
            world.do(stranger, launch.start_run, bm, FIRST)
        with pytest.raises(RateLimited):
            world.do(stranger, retries.retry_errored, first.id)
