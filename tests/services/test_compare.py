"""Comparing two runs: the paired statistics (property tests), the rules on what compares, who
sees per-question parts, and one item's result explained."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binomtest
from sqlalchemy import delete

from benchgen.core.context import Principal
from benchgen.core.errors import InvalidInput, NotFound, PermissionDenied
from benchgen.db.tables import Run, RunResult
from benchgen.jobs.worker import Worker
from benchgen.services.benchmarks import bundles, lifecycle
from benchgen.services.runs import compare, launch, results, submissions
from benchgen.services.runs.compare import mcnemar_p, paired_stats
from benchgen.services.runtime import Runtime
from tests.bundle_factory import bundle, competition
from tests.bundle_factory import results as results_zip
from tests.support import MCQ, World

FIRST = "mdl_builtin_first"
RANDOM = "mdl_builtin_random"
QUESTIONS = [
    {
        "prompt": f"Question {i}: pick one",
        "choices": [f"alpha {i}", f"beta {i}", f"gamma {i}"],
        "answer": "ABC"[i % 3],
        "tags": [f"group{i % 2}"] + (["three"] if i % 3 == 0 else []),
    }
    for i in range(12)
]
TWELVE = {"title": "Twelve", "format": "mcq", "questions": QUESTIONS}

Pairs = st.lists(st.tuples(st.booleans(), st.booleans()), min_size=1, max_size=60)


def work_all(runtime: Runtime) -> None:
    worker = Worker(runtime)
    while worker.run_once():
        pass


def finished(world: World, runtime: Runtime, user: str, benchmark: str, model: str) -> str:
    run = world.do(Principal.web(user), launch.start_run, benchmark, model)
    work_all(runtime)
    return run.id


# ---------------------------------------------------------------- the statistics


@settings(max_examples=40, deadline=None)
@given(Pairs.map(lambda pairs: [a for a, _ in pairs]))
def test_an_identical_pair_shows_no_difference(right: list[bool]) -> None:
    stats = paired_stats(right, list(right))
    assert stats.difference == 0 and stats.accuracy_a == stats.accuracy_b
    assert stats.ci_low <= 0 <= stats.ci_high
    assert stats.p_value == 1.0 and stats.only_a == stats.only_b == 0


@settings(max_examples=40, deadline=None)
@given(Pairs)
def test_swapping_the_runs_negates_the_difference_and_keeps_p(
    pairs: list[tuple[bool, bool]],
) -> None:
    right_a, right_b = [a for a, _ in pairs], [b for _, b in pairs]
    forward, backward = paired_stats(right_a, right_b), paired_stats(right_b, right_a)
    assert backward.difference == -forward.difference
    assert backward.p_value == forward.p_value
    assert (backward.only_a, backward.only_b) == (forward.only_b, forward.only_a)
    assert (backward.both_right, backward.both_wrong) == (forward.both_right, forward.both_wrong)


@settings(max_examples=40, deadline=None)
@given(Pairs, st.integers(0, 2**32 - 1))
def test_the_figures_hold_together(pairs: list[tuple[bool, bool]], seed: int) -> None:
    right_a, right_b = [a for a, _ in pairs], [b for _, b in pairs]
    stats = paired_stats(right_a, right_b, resamples=2000, seed=seed)
    n = len(pairs)
    assert stats.both_right + stats.both_wrong + stats.only_a + stats.only_b == n == stats.n
    assert stats.accuracy_a == sum(right_a) / n and stats.accuracy_b == sum(right_b) / n
    assert math.isclose(stats.difference, stats.accuracy_b - stats.accuracy_a, abs_tol=1e-12)
    # The percentile interval of a mean's resamples lies within the values it can take and,
    # its distribution being centred on the observed difference, holds it.
    assert -1 <= stats.ci_low <= stats.difference <= stats.ci_high <= 1
    # Each bound is a difference some resample gives: a whole number of questions out of n.
    for bound in (stats.ci_low, stats.ci_high):
        assert math.isclose(bound * n, round(bound * n), abs_tol=1e-9)
    assert 0 < stats.p_value <= 1
    assert stats == paired_stats(right_a, right_b, resamples=2000, seed=seed)  # seeded


def test_a_known_contingency_table_gives_the_exact_mcnemar_p() -> None:
    # 10 questions only A got right, 2 only B: p = 2 × P(X ≤ 2), X ~ Bin(12, 1/2) = 158/4096.
    right_a = [True] * 10 + [False] * 2 + [True] * 5 + [False] * 3
    right_b = [False] * 10 + [True] * 2 + [True] * 5 + [False] * 3
    stats = paired_stats(right_a, right_b)
    assert (stats.only_a, stats.only_b, stats.both_right, stats.both_wrong) == (10, 2, 5, 3)
    assert stats.p_value == pytest.approx(binomtest(2, 12).pvalue)
    assert stats.p_value == pytest.approx(158 / 4096) and round(stats.p_value, 4) == 0.0386
    assert stats.difference == pytest.approx(-8 / 20)
    assert stats.ci_high < 0  # the interval agrees with the test: B is worse


def test_no_discordant_pair_gives_p_one() -> None:
    assert mcnemar_p(0, 0) == 1.0
    assert mcnemar_p(3, 3) == 1.0


def test_the_bootstrap_interval_matches_resampling_indices() -> None:
    """Drawing category counts is drawing question indices: the interval from 10,000 index
    resamples agrees with the service's to within the resampling noise."""
    import numpy as np

    right_a = [True] * 30 + [False] * 10 + [True] * 40 + [False] * 20
    right_b = [False] * 30 + [True] * 10 + [True] * 40 + [False] * 20
    stats = paired_stats(right_a, right_b, resamples=10_000)
    per_item = np.array(right_b, dtype=float) - np.array(right_a, dtype=float)
    rng = np.random.default_rng(1)
    draws = per_item[rng.integers(0, len(per_item), size=(10_000, len(per_item)))].mean(axis=1)
    low, high = np.quantile(draws, [0.025, 0.975])
    assert stats.ci_low == pytest.approx(low, abs=0.02)
    assert stats.ci_high == pytest.approx(high, abs=0.02)


def test_statistics_need_two_lists_of_one_length() -> None:
    with pytest.raises(ValueError):
        paired_stats([], [])
    with pytest.raises(ValueError):
        paired_stats([True], [True, False])


# ---------------------------------------------------------------- two real runs


def test_two_runs_compare_question_by_question(world: World, runtime: Runtime) -> None:
    owner = world.user("owner@example.com")
    benchmark = world.benchmark(owner, TWELVE)
    run_a = finished(world, runtime, owner, benchmark, FIRST)
    run_b = finished(world, runtime, owner, benchmark, RANDOM)
    web = Principal.web(owner)
    found = world.do(web, compare.compare_runs, run_a, run_b)

    right = {
        run: [row["correct"] for row in world.do(web, results.list_results, run)]
        for run in (run_a, run_b)
    }
    expected = paired_stats(right[run_a], right[run_b])
    assert found.n == 12 and found.unpaired_a == found.unpaired_b == 0
    assert found.accuracy_a == expected.accuracy_a == 4 / 12  # "always A" is right on A keys
    assert found.accuracy_b == expected.accuracy_b
    assert (found.only_a, found.only_b, found.both_right, found.both_wrong) == (
        expected.only_a,
        expected.only_b,
        expected.both_right,
        expected.both_wrong,
    )
    assert found.p_value == expected.p_value
    assert (found.model_a, found.model_b) != ("", "")
    assert found.tags and len(found.items) == 12
    assert [item.position for item in found.items] == list(range(12))
    for item in found.items:
        a, b = right[run_a][item.position], right[run_b][item.position]
        assert (
            item.category
            == {
                (True, True): "both_right",
                (False, False): "both_wrong",
                (True, False): "only_a",
                (False, True): "only_b",
            }[(a, b)]
        )
        assert item.prompt == f"Question {item.position}: pick one"
    by_tag = {tag.tag: tag for tag in found.tags}
    assert sorted(by_tag) == ["group0", "group1", "three"]
    three = [i for i in range(12) if i % 3 == 0]
    assert by_tag["three"].n == 4
    assert by_tag["three"].accuracy_a == 1.0  # every third key is A
    assert by_tag["three"].accuracy_b == sum(right[run_b][i] for i in three) / 4
    assert by_tag["group0"].n == by_tag["group1"].n == 6


def test_a_stranger_does_not_compare_even_their_own_runs(world: World, runtime: Runtime) -> None:
    """Pairs of runs are per-question data: with a model that answers as its owner chooses,
    "both right" over two runs scores a chosen set of questions."""
    owner = world.user("owner@example.com")
    benchmark = world.benchmark(owner, TWELVE)
    world.do(Principal.web(owner), lifecycle.publish_benchmark, benchmark)
    stranger = world.user("stranger@example.com")
    run_a = finished(world, runtime, stranger, benchmark, FIRST)
    run_b = finished(world, runtime, stranger, benchmark, RANDOM)
    with pytest.raises(PermissionDenied, match="owner and collaborators compare runs"):
        world.do(Principal.web(stranger), compare.compare_runs, run_a, run_b)
    # The benchmark's owner compares the same two runs.
    owners = world.do(Principal.web(owner), compare.compare_runs, run_a, run_b)
    assert owners.n == 12 and len(owners.items) == 12
    # The owner's own run stays hidden from the stranger.
    mine = finished(world, runtime, owner, benchmark, RANDOM)
    with pytest.raises(NotFound):
        world.do(Principal.web(stranger), compare.compare_runs, run_a, mine)


def test_runs_on_different_benchmarks_do_not_compare(world: World, runtime: Runtime) -> None:
    owner = world.user("owner@example.com")
    run_a = finished(world, runtime, owner, world.benchmark(owner, TWELVE), FIRST)
    run_b = finished(world, runtime, owner, world.benchmark(owner, MCQ), FIRST)
    with pytest.raises(InvalidInput, match="different benchmarks"):
        world.do(Principal.web(owner), compare.compare_runs, run_a, run_b)


def test_runs_on_different_versions_do_not_compare(world: World, runtime: Runtime) -> None:
    owner = world.user("owner@example.com")
    benchmark = world.benchmark(owner, TWELVE)
    run_a = finished(world, runtime, owner, benchmark, FIRST)
    run_b = finished(world, runtime, owner, benchmark, RANDOM)

    def bump(ctx: object) -> None:
        ctx.session.get(Run, run_b).benchmark_version += 1  # type: ignore[attr-defined]

    world.ctx_call(Principal.web(owner), bump)
    with pytest.raises(InvalidInput, match="different versions"):
        world.do(Principal.web(owner), compare.compare_runs, run_a, run_b)


def test_a_run_still_going_does_not_compare(world: World, runtime: Runtime) -> None:
    owner = world.user("owner@example.com")
    benchmark = world.benchmark(owner, TWELVE)
    done = finished(world, runtime, owner, benchmark, FIRST)
    queued = world.do(Principal.web(owner), launch.start_run, benchmark, RANDOM).id
    with pytest.raises(InvalidInput, match="queued") as caught:
        world.do(Principal.web(owner), compare.compare_runs, done, queued)
    assert caught.value.errors[0]["loc"] == ["b"]


def test_custom_benchmark_runs_have_no_items_to_pair(world: World) -> None:
    owner = world.user("owner@example.com")
    web = Principal.web(owner)
    custom = world.do(
        web, bundles.upload_bundle, bundle(competition(solutions=[])), "b.zip"
    ).benchmark.id
    submitted = [
        world.do(web, submissions.submit, custom, results_zip({"q1": "x"}), "s.zip").id
        for _ in range(2)
    ]
    with pytest.raises(InvalidInput, match="no per-question results"):
        world.do(web, compare.compare_runs, *submitted)
    with pytest.raises(InvalidInput, match="no per-question results"):
        world.do(web, compare.explain_result, submitted[0], 0)


def test_questions_answered_in_one_run_only_are_counted_apart(
    world: World, runtime: Runtime
) -> None:
    owner = world.user("owner@example.com")
    benchmark = world.benchmark(owner, TWELVE)
    run_a = finished(world, runtime, owner, benchmark, FIRST)
    run_b = finished(world, runtime, owner, benchmark, RANDOM)

    def forget(ctx: object) -> None:  # as a cancelled run would not have answered them
        session = ctx.session  # type: ignore[attr-defined]
        session.execute(
            delete(RunResult).where(RunResult.run_id == run_a, RunResult.position.in_([0, 1]))
        )
        session.execute(
            delete(RunResult).where(RunResult.run_id == run_b, RunResult.position == 11)
        )

    world.ctx_call(Principal.web(owner), forget)
    found = world.do(Principal.web(owner), compare.compare_runs, run_a, run_b)
    assert (found.n, found.unpaired_a, found.unpaired_b) == (9, 1, 2)
    assert found.items is not None and [i.position for i in found.items] == list(range(2, 11))


def test_a_run_compared_with_itself_shows_no_difference(world: World, runtime: Runtime) -> None:
    owner = world.user("owner@example.com")
    run = finished(world, runtime, owner, world.benchmark(owner, TWELVE), RANDOM)
    found = world.do(Principal.web(owner), compare.compare_runs, run, run)
    assert (found.difference, found.ci_low, found.ci_high, found.p_value) == (0, 0, 0, 1)


def test_resamples_are_bounded(world: World, runtime: Runtime) -> None:
    owner = world.user("owner@example.com")
    run = finished(world, runtime, owner, world.benchmark(owner, TWELVE), RANDOM)
    with pytest.raises(InvalidInput, match="resamples"):
        world.do(Principal.web(owner), compare.compare_runs, run, run, resamples=0)


# ---------------------------------------------------------------- one item explained


def test_the_team_sees_why_an_item_was_wrong(world: World, runtime: Runtime) -> None:
    owner = world.user("owner@example.com")
    benchmark = world.benchmark(owner, TWELVE)
    run = finished(world, runtime, owner, benchmark, FIRST)
    shown = world.do(Principal.web(owner), compare.explain_result, run, 1)
    assert shown["position"] == 1 and shown["prompt"] == "Question 1: pick one"
    assert shown["reply"] == "ANSWER: A" and shown["prompt_sent"]
    assert shown["detail_visible"] is True
    assert (shown["extracted"], shown["outcome"], shown["expected"]) == ("A", "wrong", ["B"])
    assert shown["choices"] == ["alpha 1", "beta 1", "gamma 1"]


def test_a_stranger_sees_the_reply_but_not_the_verdict_or_key(
    world: World, runtime: Runtime
) -> None:
    owner = world.user("owner@example.com")
    benchmark = world.benchmark(owner, TWELVE)
    world.do(Principal.web(owner), lifecycle.publish_benchmark, benchmark)
    stranger = world.user("stranger@example.com")
    run = finished(world, runtime, stranger, benchmark, FIRST)
    shown = world.do(Principal.web(stranger), compare.explain_result, run, 1)
    assert shown["reply"] == "ANSWER: A" and shown["detail_visible"] is False
    assert not {"expected", "outcome", "extracted", "reasoning", "score"} & set(shown)
    with pytest.raises(NotFound):
        world.do(Principal.web(world.user("other@example.com")), compare.explain_result, run, 1)


def test_explaining_a_position_without_a_result_is_refused(world: World, runtime: Runtime) -> None:
    owner = world.user("owner@example.com")
    run = finished(world, runtime, owner, world.benchmark(owner, TWELVE), FIRST)
    with pytest.raises(InvalidInput, match="position 12") as caught:
        world.do(Principal.web(owner), compare.explain_result, run, 12)
    assert caught.value.errors[0]["loc"] == ["position"]
