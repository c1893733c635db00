"""Benchmark-creation rate limits: rolling windows, shared API/agent counting, concurrency."""

from __future__ import annotations

from datetime import datetime, timedelta
from functools import partial
from typing import Any

import pytest
from sqlalchemy import func, select

from benchgen.core.clock import ManualClock, iso_utc
from benchgen.core.context import Principal
from benchgen.core.errors import InvalidInput, PermissionDenied, RateLimited
from benchgen.core.permissions import PrincipalKind, Scope
from benchgen.db.tables import Benchmark, RateLimitEvent
from benchgen.services import deployment
from benchgen.services.accounts import ratelimits
from benchgen.services.benchmarks import lifecycle
from tests.support import OPERATOR, QA, World, at_once

pytestmark = pytest.mark.both_backends  # rolling windows in SQL and concurrent creators


def create(world: World, principal: Principal) -> str:
    return world.do(principal, lifecycle.create_benchmark, QA).benchmark.id


def count(world: World, table: Any) -> int:
    return world.ctx_call(OPERATOR, lambda ctx: ctx.session.scalar(select(func.count(table.id))))


def move_to(clock: ManualClock, moment: datetime) -> None:
    delta = moment - clock.now()
    clock.advance(days=delta.days, seconds=delta.seconds, microseconds=delta.microseconds)


def quota(world: World, principal: Principal) -> ratelimits.Quota:
    return world.ctx_call(principal, ratelimits.creation_quota)


@pytest.fixture
def ana(world: World) -> str:
    return world.user("ana@example.com")


@pytest.fixture
def api(world: World, ana: str) -> Principal:
    return world.principal(PrincipalKind.API, ana)


def test_three_per_minute_then_retry_at(world: World, api: Principal, clock: ManualClock) -> None:
    first = clock.now()
    create(world, api)
    clock.advance(seconds=10)
    create(world, api)
    clock.advance(seconds=20)
    create(world, api)
    clock.advance(seconds=25)
    with pytest.raises(RateLimited) as err:
        create(world, api)
    assert err.value.retry_at == first + timedelta(minutes=1)
    assert (err.value.limit, err.value.window) == (3, "minute")
    assert err.value.details["retry_at"] == iso_utc(first + timedelta(minutes=1))
    assert count(world, Benchmark) == 3
    assert count(world, RateLimitEvent) == 3

    # Just before retry_at it is still refused; at retry_at the oldest has left the window.
    clock.advance(seconds=4, microseconds=999_999)
    with pytest.raises(RateLimited):
        create(world, api)
    clock.advance(microseconds=1)
    assert clock.now() == first + timedelta(minutes=1)
    create(world, api)
    with pytest.raises(RateLimited) as err:
        create(world, api)
    assert err.value.retry_at == first + timedelta(seconds=70)
    assert count(world, Benchmark) == 4


def test_ten_per_rolling_day(world: World, api: Principal, clock: ManualClock) -> None:
    first = clock.now()
    for _ in range(10):
        create(world, api)
        clock.advance(minutes=1)
    with pytest.raises(RateLimited) as err:
        create(world, api)
    assert (err.value.limit, err.value.window) == (10, "day")
    assert err.value.retry_at == first + timedelta(days=1)

    clock.advance(hours=20)
    with pytest.raises(RateLimited):
        create(world, api)
    move_to(clock, first + timedelta(days=1))
    create(world, api)  # the first has left the day window
    with pytest.raises(RateLimited) as err:
        create(world, api)
    assert err.value.retry_at == first + timedelta(days=1, minutes=1)
    assert count(world, Benchmark) == 11


def test_retry_at_waits_for_every_full_window(
    world: World, api: Principal, clock: ManualClock
) -> None:
    """When both windows are full, the refusal names the later time: only then will it succeed."""
    first = clock.now()
    for _ in range(7):
        create(world, api)
        clock.advance(minutes=1)
    move_to(clock, first + timedelta(hours=12))
    burst = clock.now()
    for _ in range(3):
        create(world, api)
    with pytest.raises(RateLimited) as err:
        create(world, api)
    assert err.value.retry_at == first + timedelta(days=1)
    assert err.value.window == "day"
    # The promise holds: one moment earlier, still refused; at retry_at, allowed.
    move_to(clock, err.value.retry_at - timedelta(microseconds=1))
    assert clock.now() > burst + timedelta(minutes=1)
    with pytest.raises(RateLimited):
        create(world, api)
    move_to(clock, err.value.retry_at)
    create(world, api)


def test_api_and_agent_are_counted_together(world: World, ana: str, api: Principal) -> None:
    agent = world.principal(PrincipalKind.AGENT, ana)
    create(world, api)
    create(world, agent)
    create(world, api)
    with pytest.raises(RateLimited):
        create(world, agent)
    with pytest.raises(RateLimited):
        create(world, api)
    # A second token of the same user shares the same budget.
    other = world.principal(PrincipalKind.API, ana)
    with pytest.raises(RateLimited):
        create(world, other)


def test_limits_are_per_user(world: World, api: Principal) -> None:
    bob = world.principal(PrincipalKind.API, world.user("bob@example.com"))
    for _ in range(3):
        create(world, api)
    for _ in range(3):
        create(world, bob)
    with pytest.raises(RateLimited):
        create(world, bob)


def test_web_and_cli_are_not_limited(world: World, ana: str, api: Principal) -> None:
    for _ in range(6):
        create(world, Principal.web(ana))
        create(world, Principal.cli(ana))
    assert count(world, RateLimitEvent) == 0
    # ... nor do they use up the API budget.
    for _ in range(3):
        create(world, api)
    assert count(world, Benchmark) == 15


def test_failed_creations_do_not_count(world: World, ana: str, api: Principal) -> None:
    invalid = {"title": "Broken", "format": "essay", "questions": []}
    for _ in range(5):
        with pytest.raises(InvalidInput):
            world.do(api, lifecycle.create_benchmark, invalid)
    bad_question = {"title": "Broken", "format": "mcq", "questions": [{"prompt": "?"}]}
    with pytest.raises(InvalidInput):
        world.do(api, lifecycle.create_benchmark, bad_question)
    # Nor do creations refused for a missing scope.
    reader = world.principal(PrincipalKind.API, ana, frozenset({Scope.READ}))
    with pytest.raises(PermissionDenied):
        create(world, reader)
    assert count(world, RateLimitEvent) == 0
    for _ in range(3):
        create(world, api)
    # Refused creations do not count either: the window frees on time.
    with pytest.raises(RateLimited):
        create(world, api)
    assert count(world, RateLimitEvent) == 3


def test_rolled_back_creation_does_not_count(world: World, api: Principal) -> None:
    class Boom(Exception):
        pass

    def create_then_fail(ctx: Any) -> None:
        lifecycle.create_benchmark(ctx, QA)
        raise Boom

    for _ in range(4):
        with pytest.raises(Boom):
            world.ctx_call(api, create_then_fail)
    assert count(world, RateLimitEvent) == 0
    for _ in range(3):
        create(world, api)


def test_overrides_change_the_limits(world: World, api: Principal, clock: ManualClock) -> None:
    world.do(OPERATOR, deployment.set_setting, "create_limit_per_minute", "5")
    for _ in range(5):
        create(world, api)
    with pytest.raises(RateLimited) as err:
        create(world, api)
    assert (err.value.limit, err.value.window) == (5, "minute")

    world.do(OPERATOR, deployment.set_setting, "create_limit_per_day", "6")
    clock.advance(minutes=1)
    create(world, api)
    with pytest.raises(RateLimited) as err:
        create(world, api)
    assert (err.value.limit, err.value.window) == (6, "day")

    # Lowering a limit below what is already used refuses until enough have left the window.
    world.do(OPERATOR, deployment.set_setting, "create_limit_per_day", "100")
    world.do(OPERATOR, deployment.set_setting, "create_limit_per_minute", "1")
    clock.advance(seconds=30)
    with pytest.raises(RateLimited) as err:
        create(world, api)
    assert err.value.limit == 1
    assert err.value.retry_at == clock.now() + timedelta(seconds=30)


@pytest.mark.parametrize("creators", [20])
def test_parallel_creators(
    world: World, ana: str, api: Principal, clock: ManualClock, creators: int
) -> None:
    outcomes = at_once([partial(create, world, api)] * creators)

    made = [o for o in outcomes if isinstance(o, str)]
    limited = [o for o in outcomes if isinstance(o, RateLimited)]
    others = [o for o in outcomes if not isinstance(o, str | RateLimited)]
    assert others == []  # never a database error
    assert len(made) == 3
    assert len(limited) == creators - 3
    assert {o.retry_at for o in limited} == {clock.now() + timedelta(minutes=1)}
    assert count(world, Benchmark) == 3
    assert count(world, RateLimitEvent) == 3


def test_quota_reports_the_tighter_window(world: World, api: Principal, clock: ManualClock) -> None:
    start = clock.now()
    fresh = quota(world, api)
    assert (fresh.window, fresh.limit, fresh.remaining) == ("minute", 3, 3)

    create(world, api)
    clock.advance(seconds=10)
    create(world, api)
    busy = quota(world, api)
    assert (busy.window, busy.limit, busy.remaining) == ("minute", 3, 1)
    assert busy.reset_at == start + timedelta(minutes=1)

    for _ in range(7):
        clock.advance(minutes=1)
        create(world, api)
    # Nine made today, one in the last minute: the day window is now the tighter one.
    tight = quota(world, api)
    assert (tight.window, tight.limit, tight.remaining) == ("day", 10, 1)
    assert tight.reset_at == start + timedelta(days=1)

    clock.advance(minutes=1)
    create(world, api)
    spent = quota(world, api)
    assert (spent.window, spent.remaining) == ("day", 0)


def test_quota_follows_overrides(world: World, api: Principal) -> None:
    world.do(OPERATOR, deployment.set_setting, "create_limit_per_minute", "50")
    world.do(OPERATOR, deployment.set_setting, "create_limit_per_day", "40")
    report = quota(world, api)
    assert (report.window, report.limit, report.remaining) == ("day", 40, 40)
