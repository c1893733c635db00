"""The phases and tasks forms shown again with a problem keep what was ticked."""

from __future__ import annotations

from bs4 import BeautifulSoup

from benchgen.core.context import Principal
from benchgen.services.benchmarks import phases
from tests.support import QA
from tests.web.benchmark_site import Site, site

__all__ = ["site"]  # the module-scoped fixture, shared by the tests below


def _ticked(html: str, name: str) -> set[str]:
    boxes = BeautifulSoup(html, "html.parser").find_all("input", attrs={"name": name})
    return {str(box["value"]) for box in boxes if box.has_attr("checked")}


def test_a_phase_or_task_refused_for_its_name_keeps_the_boxes_ticked(site: Site) -> None:
    """The boxes came back empty: fixing the name and sending again added the phase with no
    tasks, which a qa benchmark takes without a word (and refused the task for want of one)."""
    bm = site.world.benchmark(site.ana_id, {**QA, "title": "Ticked"})
    owner = Principal.web(site.ana_id)
    (phase,) = [found.id for found in site.world.do(owner, phases.list_phases, bm)]
    extra = site.world.do(owner, phases.add_task, bm, "Extra", [phase])
    tasks = [task.id for task in site.world.do(owner, phases.list_tasks, bm)]
    assert extra in tasks and len(tasks) == 2
    path = f"/benchmarks/{bm}/settings"
    unnamed = site.ana.post(f"{path}/phases/add", {"phase_name": " ", "task_ids": tasks})
    assert unnamed.status_code == 422
    assert _ticked(unnamed.text, "task_ids") == set(tasks)
    undated = site.ana.post(
        f"{path}/phases/add", {"phase_name": "Final", "starts_at": "soon", "task_ids": tasks[1]}
    )
    assert undated.status_code == 422 and _ticked(undated.text, "task_ids") == {tasks[1]}
    refused = site.ana.post(f"{path}/tasks/add", {"task_name": "", "phase_ids": phase})
    assert refused.status_code == 422
    assert _ticked(refused.text, "phase_ids") == {phase}
    assert _ticked(refused.text, "task_ids") == set()
