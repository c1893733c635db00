"""The opt-in response cache: a second identical run reuses replies without calling the model
and pays nothing for them; one user's cache is never another's."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from benchgen.core.context import Principal
from benchgen.db.tables import ResponseCacheEntry
from benchgen.services.benchmarks import lifecycle
from benchgen.services.runs import launch, run_log
from benchgen.services.runtime import Runtime
from tests.evals.stub_openai import StubOpenAI
from tests.services import test_runs
from tests.services.test_runs import (
    BIG_MCQ,
    ledger_sum,
    priced_model,
    work_all,
)
from tests.support import OPERATOR, World

open_loopback = test_runs.open_loopback  # a fixture shared with the runs tests
stub = test_runs.stub  # a fixture shared with the runs tests

pytestmark = pytest.mark.both_backends  # the cache's insert-or-keep differs by backend
CACHED = {"cache": True}


def cached_entries(world: World, user: str) -> int:
    return int(
        world.ctx_call(
            OPERATOR,
            lambda ctx: ctx.session.scalar(
                select(func.count()).where(ResponseCacheEntry.user_id == user)
            ),
        )
        or 0
    )


def test_a_cached_run_reuses_replies_and_costs_nothing_for_them(
    world: World, open_loopback: Runtime, stub: StubOpenAI
) -> None:
    ana = world.user("ana@example.com", credits_=100)
    bm = world.benchmark(ana, BIG_MCQ)
    model = priced_model(world, stub, per_question=2)
    web = Principal.web(ana)
    first = world.do(web, launch.start_run, bm, model, None, CACHED)
    work_all(open_loopback)
    assert world.do(web, launch.get_run, first.id).cost == 24
    assert cached_entries(world, ana) == 12 and sum(stub.received.values()) == 12
    second = world.do(web, launch.start_run, bm, model, None, CACHED)
    work_all(open_loopback)
    again = world.do(web, launch.get_run, second.id)
    assert sum(stub.received.values()) == 12, "the model was asked again"
    assert again.status == "completed" and again.cost == 0
    assert again.summary["accuracy"] == world.do(web, launch.get_run, first.id).summary["accuracy"]
    assert ledger_sum(world, ana) == 100 - 24
    lines = [line.line for line in world.do(web, run_log.read_log, second.id)]
    assert "Reused 12 answers from your cache" in lines
    # Without `cache`, a run asks the model even when replies are cached.
    world.do(web, launch.start_run, bm, model)
    work_all(open_loopback)
    assert sum(stub.received.values()) == 24


def test_other_settings_or_samples_miss_the_cache(
    world: World, open_loopback: Runtime, stub: StubOpenAI
) -> None:
    ana = world.user("ana@example.com", credits_=1000)
    bm = world.benchmark(ana, BIG_MCQ)
    model = priced_model(world, stub, per_question=1)
    web = Principal.web(ana)
    world.do(web, launch.start_run, bm, model, None, CACHED)
    work_all(open_loopback)
    warmer = {"cache": True, "settings": {"temperature": 0.5}}
    world.do(web, launch.start_run, bm, model, None, warmer)
    work_all(open_loopback)
    assert sum(stub.received.values()) == 24
    sampled = {"cache": True, "settings": {"samples": 2}}
    world.do(web, launch.start_run, bm, model, None, sampled)
    work_all(open_loopback)
    assert sum(stub.received.values()) == 36  # sample 0 was cached, sample 1 was not


def test_a_users_cache_is_never_anothers(
    world: World, open_loopback: Runtime, stub: StubOpenAI
) -> None:
    ana = world.user("ana@example.com", credits_=100)
    sam = world.user("sam@example.com", credits_=100)
    bm = world.benchmark(ana, BIG_MCQ)
    world.do(Principal.web(ana), lifecycle.publish_benchmark, bm)
    model = priced_model(world, stub, per_question=2)
    world.do(Principal.web(ana), launch.start_run, bm, model, None, CACHED)
    work_all(open_loopback)
    assert cached_entries(world, ana) == 12
    run = world.do(Principal.web(sam), launch.start_run, bm, model, None, CACHED)
    work_all(open_loopback)
    assert sum(stub.received.values()) == 24, "Sam's run used Ana's cache"
    assert world.do(Principal.web(sam), launch.get_run, run.id).cost == 24
    assert cached_entries(world, sam) == 12 and cached_entries(world, ana) == 12
