"""What a run's page offers each person: cancel, leaderboard, score edits, the edit's reason."""

from __future__ import annotations

import pytest

from benchgen.core.context import Principal
from benchgen.core.errors import NotFound
from benchgen.jobs.worker import Worker
from benchgen.services.benchmarks import lifecycle
from benchgen.services.runs import launch, leaderboards
from benchgen.services.runs.controls import run_controls
from benchgen.services.runtime import Runtime
from tests.support import MCQ, World

FIRST = "mdl_builtin_first"


def work_all(runtime: Runtime) -> None:
    worker = Worker(runtime)
    while worker.run_once():
        pass


def test_controls_follow_roles_and_status(world: World, runtime: Runtime) -> None:
    owner, helper, stranger = (world.user(f"{n}@example.com") for n in ("own", "help", "str"))
    benchmark = world.benchmark(owner, MCQ)
    world.collaborator(owner, benchmark, "help@example.com")
    world.do(Principal.web(owner), lifecycle.publish_benchmark, benchmark)
    theirs = world.do(Principal.web(stranger), launch.start_run, benchmark, FIRST).id

    queued = world.do(Principal.web(stranger), run_controls, theirs)
    assert queued.can_cancel and queued.benchmark_title == "Colours"
    assert not queued.can_manage_leaderboard and not queued.can_edit_score
    assert world.do(Principal.web(owner), run_controls, theirs).can_cancel
    assert not world.do(Principal.web(helper), run_controls, theirs).can_cancel

    work_all(runtime)
    world.do(Principal.web(owner), leaderboards.edit_run_score, theirs, {"accuracy": 1}, "key bug")
    world.do(Principal.web(helper), leaderboards.add_to_leaderboard, theirs)
    by_owner = world.do(Principal.web(owner), run_controls, theirs)
    assert not by_owner.can_cancel and by_owner.can_edit_score and by_owner.on_leaderboard
    assert by_owner.edit_reason == "key bug"
    by_helper = world.do(Principal.web(helper), run_controls, theirs)
    assert by_helper.can_manage_leaderboard and not by_helper.can_edit_score
    by_stranger = world.do(Principal.web(stranger), run_controls, theirs)
    assert by_stranger.on_leaderboard and by_stranger.edit_reason is None


def test_a_launcher_keeps_the_run_when_the_benchmark_is_hidden_again(
    world: World, runtime: Runtime
) -> None:
    owner, stranger = world.user("own@example.com"), world.user("str@example.com")
    benchmark = world.benchmark(owner, MCQ)
    world.do(Principal.web(owner), lifecycle.publish_benchmark, benchmark)
    theirs = world.do(Principal.web(stranger), launch.start_run, benchmark, FIRST).id
    world.do(Principal.web(owner), lifecycle.unpublish_benchmark, benchmark)
    controls = world.do(Principal.web(stranger), run_controls, theirs)
    assert controls.benchmark_title is None
    other = world.user("other@example.com")
    with pytest.raises(NotFound):
        world.do(Principal.web(other), run_controls, theirs)
