"""Tasks of a benchmark: added and removed by the owner in the web app or CLI only."""

import pytest

from benchgen.core.context import Principal
from benchgen.core.errors import Conflict, InvalidInput, NotFound, PermissionDenied
from benchgen.core.permissions import PrincipalKind
from benchgen.services.benchmarks import phases
from tests.support import World


@pytest.mark.both_backends
def test_add_and_remove_tasks(world: World) -> None:
    ana, bob = world.user("ana@example.com"), world.user("bob@example.com")
    bm = world.benchmark(ana)
    web = Principal.web(ana)
    [main] = world.do(web, phases.list_phases, bm)
    assert len(main.task_ids) == 1
    task = world.do(web, phases.add_task, bm, "Hard subset", [main.id])
    [main] = world.do(web, phases.list_phases, bm)
    assert task in main.task_ids and len(main.task_ids) == 2
    with pytest.raises(InvalidInput):
        world.do(web, phases.add_task, bm, "Orphan", [])
    with pytest.raises(NotFound):
        world.do(web, phases.add_task, bm, "Elsewhere", ["ph_nope"])
    for door in (PrincipalKind.API, PrincipalKind.AGENT):
        with pytest.raises(PermissionDenied):
            world.do(world.principal(door, ana), phases.remove_task, bm, task)
    with pytest.raises(NotFound):
        world.do(Principal.web(bob), phases.remove_task, bm, task)
    world.do(web, phases.remove_task, bm, task)
    [main] = world.do(web, phases.list_phases, bm)
    with pytest.raises(Conflict, match="at least one task"):
        world.do(web, phases.remove_task, bm, main.task_ids[0])
