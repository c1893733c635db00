"""A run's log counts its questions in words that read right for one."""

from __future__ import annotations

from benchgen.core.context import Principal
from benchgen.services.runs import launch, run_log
from tests.services.test_runs import work_all
from tests.support import MCQ, World

FIRST = "mdl_builtin_first"


def test_a_one_question_run_logs_one_question(world: World) -> None:
    """The log said "Started: 1 questions" (and "Resumed: 1 questions left")."""
    ana = Principal.web(world.user("ana@example.com"))
    one = {**MCQ, "questions": MCQ["questions"][:1]}
    run = world.do(ana, launch.start_run, world.benchmark(ana.user_id or "", one), FIRST)
    work_all(world.rt)
    lines = [line.line for line in world.do(ana, run_log.read_log, run.id)]
    assert "Started: 1 question" in lines
