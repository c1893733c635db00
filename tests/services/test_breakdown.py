"""A run's breakdown: filtered pages of results, accuracy by tag with Wilson intervals, and who
may see them."""

from __future__ import annotations

import math

import pytest

from benchgen.core.context import Principal
from benchgen.core.errors import InvalidInput, NotFound, PermissionDenied
from benchgen.jobs.worker import Worker
from benchgen.services.benchmarks import lifecycle
from benchgen.services.runs import breakdown, launch
from benchgen.services.runs.breakdown import accuracy_of
from benchgen.services.runtime import Runtime
from tests.support import World

RANDOM = "mdl_builtin_random"
# The seeded random baseline answers a word of each prompt: right, wrong, nothing, wrong.
TAGGED_QA = {
    "title": "Tagged",
    "format": "qa",
    "questions": [
        {"prompt": "Paris Paris", "answer": "Paris", "tags": ["geo"]},
        {"prompt": "Tokyo", "answer": "Rome", "tags": ["geo", "hard"]},
        {"prompt": "???", "answer": "x", "tags": ["hard"]},
        {"prompt": "Oslo", "answer": "Bergen", "tags": []},
    ],
}


def finished_run(world: World, runtime: Runtime, user_id: str, benchmark_id: str) -> str:
    run = world.do(Principal.web(user_id), launch.start_run, benchmark_id, RANDOM)
    worker = Worker(runtime)
    while worker.run_once():
        pass
    return run.id


@pytest.fixture
def owner_run(world: World, runtime: Runtime) -> tuple[str, str, str]:
    """(owner id, benchmark id, run id) of a finished run of the owner's tagged benchmark."""
    owner = world.user("owner@example.com")
    benchmark = world.benchmark(owner, TAGGED_QA)
    return owner, benchmark, finished_run(world, runtime, owner, benchmark)


def wilson(k: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """The textbook formula, written out independently of the service."""
    p = k / n
    centre = p + z * z / (2 * n)
    spread = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (centre - spread) / (1 + z * z / n), (centre + spread) / (1 + z * z / n)


@pytest.mark.parametrize(
    ("k", "n", "low", "high"),
    [(0, 10, 0.0, 0.2775), (5, 10, 0.2366, 0.7634), (10, 10, 0.7225, 1.0), (1, 1, 0.2065, 1.0)],
)
def test_wilson_interval_of_known_counts(k: int, n: int, low: float, high: float) -> None:
    stat = accuracy_of("t", k, n)
    assert (stat.ci_low, stat.ci_high) == pytest.approx((low, high), abs=1e-4)
    assert stat.accuracy == k / n and stat.ci_low <= stat.accuracy <= stat.ci_high


@pytest.mark.parametrize(("k", "n"), [(3, 7), (1, 40), (39, 40), (250, 1000)])
def test_wilson_interval_matches_the_formula(k: int, n: int) -> None:
    stat = accuracy_of("t", k, n)
    assert (stat.ci_low, stat.ci_high) == pytest.approx(wilson(k, n), abs=1e-9)


def test_accuracy_of_refuses_impossible_counts() -> None:
    with pytest.raises(ValueError):
        accuracy_of("t", 3, 2)


def test_tag_accuracy_counts_each_tag_of_a_question(
    world: World, owner_run: tuple[str, str, str]
) -> None:
    owner, _, run_id = owner_run
    stats = world.do(Principal.web(owner), breakdown.tag_accuracy, run_id)
    assert [(s.tag, s.n, s.correct) for s in stats] == [("geo", 2, 1), ("hard", 2, 0)]
    geo = stats[0]
    assert geo.accuracy == 0.5
    assert (geo.ci_low, geo.ci_high) == pytest.approx(wilson(1, 2))


@pytest.mark.parametrize(
    ("show", "tag", "positions"),
    [
        ("all", "", [0, 1, 2, 3]),
        ("wrong", "", [1, 3]),
        ("no_answer", "", [2]),
        ("all", "hard", [1, 2]),
        ("wrong", "geo", [1]),
        ("no_answer", "geo", []),
        ("all", "nope", []),
    ],
)
def test_breakdown_filters(
    world: World, owner_run: tuple[str, str, str], show: str, tag: str, positions: list[int]
) -> None:
    owner, _, run_id = owner_run
    found = world.do(Principal.web(owner), breakdown.list_breakdown, run_id, show, tag)
    assert [row.position for row in found.rows] == positions
    assert found.total == len(positions) and found.tags == ["geo", "hard"]


def test_breakdown_rows_carry_the_key_and_verdict(
    world: World, owner_run: tuple[str, str, str]
) -> None:
    owner, _, run_id = owner_run
    found = world.do(Principal.web(owner), breakdown.list_breakdown, run_id, "all", "", 1, 1)
    (row,) = found.rows
    assert found.total == 4
    assert (row.position, row.prompt, row.expected, row.outcome) == (1, "Tokyo", ["Rome"], "wrong")
    assert row.raw == "ANSWER: Tokyo" and row.extracted == "Tokyo" and row.tags == ["geo", "hard"]


def test_unknown_filter_is_refused(world: World, owner_run: tuple[str, str, str]) -> None:
    owner, _, run_id = owner_run
    with pytest.raises(InvalidInput):
        world.do(Principal.web(owner), breakdown.list_breakdown, run_id, "right")


def test_a_stranger_sees_neither_breakdown_nor_tags_of_their_own_run(
    world: World, runtime: Runtime, owner_run: tuple[str, str, str]
) -> None:
    owner, benchmark, owners_run = owner_run
    world.do(Principal.web(owner), lifecycle.publish_benchmark, benchmark)
    stranger = world.user("stranger@example.com")
    theirs = finished_run(world, runtime, stranger, benchmark)
    web = Principal.web(stranger)
    assert not world.do(web, launch.get_run, theirs).detail_visible
    for call in (breakdown.tag_accuracy, breakdown.list_breakdown):
        with pytest.raises(PermissionDenied):
            world.do(web, call, theirs)
        with pytest.raises(NotFound):
            world.do(web, call, owners_run)
