"""A participant may not apply a rescoring to their run on a leaderboard: only the team may."""

from __future__ import annotations

import pytest

from benchgen.core.context import Principal
from benchgen.core.errors import PermissionDenied
from benchgen.jobs.worker import Worker
from benchgen.services.benchmarks import lifecycle
from benchgen.services.runs import launch, leaderboards, rescoring
from benchgen.services.runtime import Runtime
from tests.support import QA, World

ECHO = "mdl_builtin_echo"


def _finished_run(world: World, runtime: Runtime, user: str, bm: str) -> str:
    run_id = world.do(Principal.web(user), launch.start_run, bm, ECHO).id
    while Worker(runtime).run_once():
        pass
    return run_id


def test_a_ranked_run_is_rescored_only_by_the_benchmarks_team(
    world: World, runtime: Runtime
) -> None:
    """The launcher could apply a rescoring to their ranked run: after a scorer changed, they
    could dry-run it, apply it only when it raised their rank, and leave the runs ranked beside
    theirs scored the old way."""
    ana, eve = world.user("ana@example.com"), world.user("eve@example.com", credits_=100)
    bm = world.benchmark(ana, QA)
    owner, stranger = Principal.web(ana), Principal.web(eve)
    world.do(owner, lifecycle.publish_benchmark, bm)
    ranked, unranked = (_finished_run(world, runtime, eve, bm) for _ in range(2))
    world.do(owner, leaderboards.add_to_leaderboard, ranked)
    with pytest.raises(PermissionDenied, match="on a leaderboard"):
        world.do(stranger, rescoring.rescore_run, ranked, None, True)
    assert not world.do(stranger, rescoring.rescore_run, ranked).applied  # a dry run still is
    assert world.do(stranger, rescoring.rescore_run, unranked, None, True).applied
    assert world.do(owner, rescoring.rescore_run, ranked, None, True).applied
