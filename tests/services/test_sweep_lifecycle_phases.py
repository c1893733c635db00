"""Phases as their owner adds them: what a sloppy form sends is taken or refused by name."""

from __future__ import annotations

from benchgen.core.context import Principal
from benchgen.services.benchmarks import phases
from tests.support import QA, World


def test_a_phase_naming_one_task_twice_runs_it_once(world: World) -> None:
    """A form that sent the task twice stored two links of one task to the phase: a 500."""
    ana = Principal.web(world.user("ana@example.com"))
    bm = world.benchmark(ana.user_id or "", QA)
    (task,) = world.do(ana, phases.list_tasks, bm)
    added = world.do(ana, phases.add_phase, bm, "Final", None, None, [task.id, task.id])
    assert added.task_ids == [task.id]
    assert [phase.task_ids for phase in world.do(ana, phases.list_phases, bm)][1] == [task.id]
