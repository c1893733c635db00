"""A benchmark's life asked twice at the same moment (two tabs, two clicks): phases and tasks
added or removed together, questions edited together, a whitelist entry removed twice; none may
be lost, share a place, leave a broken link or be done twice."""

from __future__ import annotations

import contextlib
import threading
from typing import Any

import pytest

from benchgen.core.context import Principal
from benchgen.core.errors import Conflict, NotFound
from benchgen.services import audit
from benchgen.services.benchmarks import lifecycle, members, phases, question_edits
from tests.support import OPERATOR, QA, World, at_once

pytestmark = pytest.mark.both_backends  # PostgreSQL lets both transactions read at once


def test_two_phases_added_at_once_take_different_positions(world: World) -> None:
    """Both read the same highest position, and both phases were stored one after it."""
    ana = Principal.web(world.user("ana@example.com"))
    bm = world.benchmark(ana.user_id or "", QA)
    adds = [lambda n=n: world.do(ana, phases.add_phase, bm, f"Phase {n}") for n in range(3)]
    outcomes = at_once(adds)
    assert not [o for o in outcomes if isinstance(o, Exception)], outcomes
    positions = [phase.position for phase in world.do(ana, phases.list_phases, bm)]
    assert positions == [0, 1, 2, 3]


def test_two_question_edits_from_one_page_at_once_lose_neither(world: World) -> None:
    """Both read the list before either stored it: the second stored its own copy of the old
    list over the first's edit, though both named the version they had seen."""
    ana = Principal.web(world.user("ana@example.com"))
    bm = world.benchmark(ana.user_id or "", QA)

    def replace(position: int, answer: str) -> object:
        edit = {"prompt": f"Edited {position}?", "answer": answer}
        return world.do(ana, question_edits.replace_question, bm, position, edit, 1)

    outcomes = at_once([lambda: replace(0, "One"), lambda: replace(1, "Two")])
    refused = [o for o in outcomes if isinstance(o, Conflict)]
    assert len(refused) == 1 and "changed since" in refused[0].message
    prompts = [q["prompt"] for q in world.do(ana, lifecycle.list_questions, bm)]
    assert sorted(prompts) in (
        ["Capital of Japan?", "Edited 0?"],
        ["Capital of France?", "Edited 1?"],
    )
    assert world.do(ana, lifecycle.get_benchmark, bm).version == 2


def test_the_last_two_tasks_removed_at_once_leave_one(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each counted two tasks and removed its own: the benchmark was left with none."""
    _meet_when_reading(monkeypatch, "_task")
    ana = Principal.web(world.user("ana@example.com"))
    bm = world.benchmark(ana.user_id or "", QA)
    (main,) = world.do(ana, phases.list_phases, bm)
    world.do(ana, phases.add_task, bm, "Second", [main.id])
    tasks = [task.id for task in world.do(ana, phases.list_tasks, bm)]
    removes = [lambda t=t: world.do(ana, phases.remove_task, bm, t) for t in tasks]
    outcomes = at_once(removes)
    refused = [o for o in outcomes if isinstance(o, Conflict)]
    assert len(refused) == 1 and "at least one task" in refused[0].message
    assert len(world.do(ana, phases.list_tasks, bm)) == 1


def test_a_task_added_to_a_phase_removed_at_once_is_refused_or_kept(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The task's link named a phase deleted meanwhile: a broken foreign key, a 500."""
    _meet_when_reading(monkeypatch, "_phase")
    ana = Principal.web(world.user("ana@example.com"))
    bm = world.benchmark(ana.user_id or "", QA)
    extra = world.do(ana, phases.add_phase, bm, "Extra")
    outcomes = at_once(
        [
            lambda: world.do(ana, phases.add_task, bm, "New", [extra.id]),
            lambda: world.do(ana, phases.remove_phase, bm, extra.id),
        ]
    )
    unexpected = [o for o in outcomes if isinstance(o, Exception) and not isinstance(o, NotFound)]
    assert not unexpected, outcomes


def test_a_whitelist_entry_removed_twice_at_once_is_removed_once(world: World) -> None:
    """Both removals found the entry, both succeeded and both were audited."""
    ana = Principal.web(world.user("ana@example.com"))
    bm = world.benchmark(ana.user_id or "", QA)
    world.do(ana, members.add_whitelist_entries, bm, ["@example.org"])
    remove = lambda: world.do(ana, members.remove_whitelist_entry, bm, "@example.org")  # noqa: E731
    outcomes = at_once([remove, remove])
    assert sorted(type(o).__name__ for o in outcomes) == ["NoneType", "NotFound"]
    assert len(world.do(OPERATOR, audit.list_events, bm, action="whitelist.remove")) == 1


def _meet_when_reading(monkeypatch: pytest.MonkeyPatch, reader: str) -> None:
    """Make two calls of `phases.<reader>` wait (a while) for each other: both read what they
    change before either stores it. Held as it should be, the second waits for the first to
    commit instead, and the first goes on alone."""
    found, both = getattr(phases, reader), threading.Barrier(2)

    def meeting(*args: Any) -> Any:
        with contextlib.suppress(threading.BrokenBarrierError):
            both.wait(2)
        return found(*args)

    monkeypatch.setattr(phases, reader, meeting)
