"""Leaderboard changes asked twice at the same moment (two clicks, two tabs): one wins, the other
is refused as a second ask alone is, and the audit tells what really happened."""

from __future__ import annotations

import pytest

from benchgen.core.context import Principal
from benchgen.core.errors import Conflict, NotFound
from benchgen.services import audit
from benchgen.services.runs import launch, leaderboards
from benchgen.services.runtime import Runtime
from tests.services.test_rescoring_leaderboards import ECHO, finished_run
from tests.support import OPERATOR, QA, World, at_once

pytestmark = pytest.mark.both_backends  # PostgreSQL lets both transactions read at once


def _run(world: World, runtime: Runtime) -> tuple[Principal, str]:
    ana = world.user("ana@example.com")
    bm = world.benchmark(ana, QA)
    return Principal.web(ana), finished_run(world, runtime, ana, bm, ECHO)


def _kinds(outcomes: list[object]) -> list[str]:
    return sorted(type(outcome).__name__ for outcome in outcomes)


def test_a_run_added_twice_at_once_is_added_once_and_the_other_told_so(
    world: World, runtime: Runtime
) -> None:
    """Both found the run off the board; the second insert broke the unique run: a 500."""
    owner, run_id = _run(world, runtime)
    add = lambda: world.do(owner, leaderboards.add_to_leaderboard, run_id)  # noqa: E731
    outcomes = at_once([add, add])
    assert _kinds(outcomes) == ["Conflict", "NoneType"]
    assert any(isinstance(o, Conflict) and "already on" in o.message for o in outcomes)
    bm = world.do(owner, launch.get_run, run_id).benchmark_id
    board = world.do(owner, leaderboards.get_leaderboard, bm)
    assert [row.run_id for row in board.rows] == [run_id]
    assert len(world.do(OPERATOR, audit.list_events, run_id, action="leaderboard.add")) == 1


def test_a_run_removed_twice_at_once_is_removed_once(world: World, runtime: Runtime) -> None:
    """Both removals deleted the one entry and both were audited, as if removed twice."""
    owner, run_id = _run(world, runtime)
    world.do(owner, leaderboards.add_to_leaderboard, run_id)
    remove = lambda: world.do(owner, leaderboards.remove_from_leaderboard, run_id)  # noqa: E731
    outcomes = at_once([remove, remove])
    assert _kinds(outcomes) == ["NoneType", "NotFound"]
    assert all(o is None or isinstance(o, NotFound) for o in outcomes)
    assert len(world.do(OPERATOR, audit.list_events, run_id, action="leaderboard.remove")) == 1
    with pytest.raises(NotFound):
        world.do(owner, leaderboards.remove_from_leaderboard, run_id)


def test_two_score_edits_at_once_each_audit_the_score_they_replaced(
    world: World, runtime: Runtime
) -> None:
    """Both read the computed score: the audit said each replaced it, though one replaced the
    other's correction (and a rescoring at that moment lost its scores the same way)."""
    owner, run_id = _run(world, runtime)
    computed = world.do(owner, launch.get_run, run_id).scores

    def edit(value: float) -> None:
        world.do(owner, leaderboards.edit_run_score, run_id, {"accuracy": value}, "typo")

    outcomes = at_once([lambda: edit(0.1), lambda: edit(0.2)])
    assert outcomes == [None, None]
    final = world.do(owner, launch.get_run, run_id).scores["accuracy"]
    events = world.do(OPERATOR, audit.list_events, run_id, action="run.edit_score")
    befores = {e.details["scores"]["accuracy"]: e.details["before"] for e in events}
    first = 0.1 if final == 0.2 else 0.2
    assert befores == {first: computed, final: {"accuracy": first}}
