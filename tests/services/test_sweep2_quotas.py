"""The quota a client is shown (`X-RateLimit-*`, `/run-quota`) promises what the refusal says."""

from __future__ import annotations

from datetime import timedelta

import pytest

from benchgen.core.clock import ManualClock
from benchgen.core.context import Principal
from benchgen.core.errors import RateLimited
from benchgen.core.permissions import PrincipalKind
from benchgen.services import deployment
from benchgen.services.accounts import ratelimits
from benchgen.services.benchmarks import lifecycle
from benchgen.services.runs import launch
from tests.support import MCQ, OPERATOR, QA, World

pytestmark = pytest.mark.both_backends  # rolling windows in SQL


def refusal(world: World, principal: Principal, call: object, *args: object) -> RateLimited:
    with pytest.raises(RateLimited) as err:
        world.do(principal, call, *args)  # type: ignore[arg-type]
    return err.value


def test_creation_quota_with_both_windows_full_resets_when_both_have_room(
    world: World, clock: ManualClock
) -> None:
    api = world.principal(PrincipalKind.API, world.user("ana@example.com"))
    first = clock.now()
    for _ in range(7):
        world.do(api, lifecycle.create_benchmark, QA)
        clock.advance(hours=1)
    for _ in range(3):  # the day's last three in one minute: both windows are full
        world.do(api, lifecycle.create_benchmark, QA)
    shown = world.ctx_call(api, ratelimits.creation_quota)
    refused = refusal(world, api, lifecycle.create_benchmark, QA)
    assert refused.retry_at == first + timedelta(days=1)
    assert (shown.remaining, shown.window, shown.limit) == (0, "day", 10)
    assert shown.reset_at == refused.retry_at


def test_creation_quota_under_a_lowered_limit_resets_when_the_refusal_says(
    world: World, clock: ManualClock
) -> None:
    api = world.principal(PrincipalKind.API, world.user("ana@example.com"))
    for _ in range(6):
        world.do(api, lifecycle.create_benchmark, QA)
        clock.advance(minutes=10)
    world.do(OPERATOR, deployment.set_setting, "create_limit_per_day", "4")
    shown = world.ctx_call(api, ratelimits.creation_quota)
    refused = refusal(world, api, lifecycle.create_benchmark, QA)
    assert (shown.remaining, shown.window) == (0, "day")
    # Six made, four allowed: room comes when the third leaves the day, not the first.
    assert shown.reset_at == refused.retry_at


def test_run_quota_under_a_lowered_quota_resets_when_the_refusal_says(
    world: World, clock: ManualClock
) -> None:
    owner = world.user("ana@example.com")
    sam = Principal.web(world.user("sam@example.com"))
    benchmark = world.benchmark(owner, MCQ)
    world.do(Principal.web(owner), lifecycle.publish_benchmark, benchmark)
    for _ in range(5):
        world.do(sam, launch.start_run, benchmark, "mdl_builtin_first")
        clock.advance(hours=1)
    world.do(Principal.web(owner), ratelimits.set_run_quota, benchmark, 2)
    shown = world.do(sam, ratelimits.run_quota, benchmark)
    refused = refusal(world, sam, launch.start_run, benchmark, "mdl_builtin_first")
    assert shown is not None and shown.remaining == 0
    assert shown.reset_at == refused.retry_at
