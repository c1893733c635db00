"""A custom benchmark's phase always runs a task: its runs never start with nothing to do."""

from __future__ import annotations

import pytest

from benchgen.core.context import Principal
from benchgen.core.errors import Conflict, InvalidInput
from benchgen.services.benchmarks import bundles, phases
from tests.bundle_factory import bundle, competition, require_sandbox
from tests.support import World


@pytest.fixture
def custom(world: World) -> tuple[Principal, str]:
    require_sandbox()
    ana = Principal.web(world.user("ana@example.com"))
    made = world.do(ana, bundles.upload_bundle, bundle(competition()), "tiny.zip")
    return ana, made.benchmark.id


def test_a_custom_phase_without_a_task_is_refused(
    world: World, custom: tuple[Principal, str]
) -> None:
    """It was added; a submission to it failed saying the scorer reported no columns."""
    ana, bm = custom
    with pytest.raises(InvalidInput) as err:
        world.do(ana, phases.add_phase, bm, "Empty", None, None, [])
    assert [error["loc"] for error in err.value.errors] == [["task_ids"]]
    assert [phase.name for phase in world.do(ana, phases.list_phases, bm)] == ["Development"]


def test_the_only_task_of_a_custom_phase_stays(world: World) -> None:
    """Removing it left the phase with nothing to evaluate (another task kept the count up)."""
    require_sandbox()
    ana = Principal.web(world.user("ana@example.com"))
    comp = competition()
    second = {**comp["tasks"][0], "index": 1, "name": "Second"}
    comp["tasks"].append(second)
    comp["phases"].append({**comp["phases"][0], "index": 1, "name": "Extra", "tasks": [0, 1]})
    bm = world.do(ana, bundles.upload_bundle, bundle(comp), "two.zip").benchmark.id
    development = world.do(ana, phases.list_phases, bm)[0]
    answer = next(task for task in world.do(ana, phases.list_tasks, bm) if task.name == "Answer")
    with pytest.raises(Conflict, match="only one phase 'Development' runs"):
        world.do(ana, phases.remove_task, bm, answer.id)
    assert world.do(ana, phases.list_phases, bm)[0].task_ids == development.task_ids


def test_a_task_is_never_added_by_hand_to_a_custom_benchmark(
    world: World, custom: tuple[Principal, str]
) -> None:
    """It had no scoring program: runs skipped it, and a phase of only such tasks ran none."""
    ana, bm = custom
    (development,) = world.do(ana, phases.list_phases, bm)
    with pytest.raises(InvalidInput, match="tasks come from its bundle"):
        world.do(ana, phases.add_task, bm, "By hand", [development.id])
    assert [task.name for task in world.do(ana, phases.list_tasks, bm)] == ["Answer"]
