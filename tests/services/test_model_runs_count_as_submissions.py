"""A phase's submission limits bound what a participant learns of a custom benchmark's hidden
data; a catalogue model run in that phase (the participant's own endpoint answers whatever they
like) counts against them as a submission does."""

from __future__ import annotations

import pytest

from benchgen.core.context import Principal
from benchgen.core.errors import Conflict, RateLimited
from benchgen.services.benchmarks import bundles, lifecycle
from benchgen.services.runs import launch, submissions
from tests.bundle_factory import ANSWERS, bundle, competition, require_sandbox, results
from tests.support import World

ECHO = "mdl_builtin_echo"


@pytest.fixture(autouse=True)
def _sandbox() -> None:
    require_sandbox()


def published(world: World, owner: str, **rules: int) -> str:
    comp = competition()
    comp["phases"][0].update(rules)
    made = world.do(Principal.web(owner), bundles.upload_bundle, bundle(comp), "tiny.zip")
    world.do(Principal.web(owner), lifecycle.publish_benchmark, made.benchmark.id)
    return made.benchmark.id


def test_model_runs_use_up_max_submissions(world: World) -> None:
    """Model runs were never counted: max_submissions held only for zips."""
    ana = world.user("ana@example.com")
    bob = world.user("bob@example.com", credits_=1000)
    bm = published(world, ana, max_submissions=2)
    web = Principal.web(bob)
    world.do(web, submissions.submit, bm, results(ANSWERS), "a.zip")
    world.do(web, launch.start_run, bm, ECHO)
    with pytest.raises(Conflict, match="used 2 of the 2 submissions"):
        world.do(web, launch.start_run, bm, ECHO)
    with pytest.raises(Conflict, match="used 2 of the 2 submissions"):
        world.do(web, submissions.submit, bm, results(ANSWERS), "b.zip")


def test_model_runs_use_up_the_daily_submissions(world: World) -> None:
    ana = world.user("ana@example.com")
    bob = world.user("bob@example.com", credits_=1000)
    bm = published(world, ana, max_submissions=10, max_submissions_per_day=1)
    web = Principal.web(bob)
    world.do(web, launch.start_run, bm, ECHO)
    with pytest.raises(RateLimited, match="allows 1 submissions per day"):
        world.do(web, submissions.submit, bm, results(ANSWERS), "a.zip")


def test_a_model_run_cancelled_before_it_started_counts_nothing(world: World) -> None:
    ana = world.user("ana@example.com")
    bob = world.user("bob@example.com", credits_=1000)
    bm = published(world, ana, max_submissions=1)
    web = Principal.web(bob)
    queued = world.do(web, launch.start_run, bm, ECHO)
    world.do(web, launch.cancel_run, queued.id)
    assert world.do(web, launch.start_run, bm, ECHO).status == "queued"
