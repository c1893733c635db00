"""Lists and single-object decisions agree: whatever the roles, a list shows exactly what the
per-object check lets the user open (the list filters are built from the same rule table)."""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from sqlalchemy import select

from benchgen.core.context import Context, Principal
from benchgen.core.errors import BenchGenError
from benchgen.core.permissions import Action, Role
from benchgen.db.tables import Benchmark, Run
from benchgen.services import access
from benchgen.services.benchmarks import lifecycle, members
from benchgen.services.runs import launch
from tests.support import MCQ, World

USERS = 3
FREE = "mdl_builtin_random"
_fresh = itertools.count()


@pytest.fixture
def backend() -> str:
    return "sqlite"  # the filters are plain SQL; PostgreSQL runs the same statements


@dataclass(frozen=True)
class Plan:
    """One benchmark's story: who owns it, who shares it, joins, is whitelisted, runs it."""

    owner: int
    published: bool
    deleted: bool
    collaborators: frozenset[int]
    whitelisted: frozenset[int]
    joined: frozenset[int]
    removed: frozenset[int]
    launchers: frozenset[int]


people = st.frozensets(st.integers(0, USERS - 1))
plans = st.builds(Plan, st.integers(0, USERS - 1), st.booleans(), st.booleans(), *([people] * 5))


def build(world: World, users: list[str], emails: list[str], plan: Plan) -> None:
    web = [Principal.web(user) for user in users]
    owner = web[plan.owner]
    bm = world.benchmark(users[plan.owner], {**MCQ, "title": f"B{next(_fresh)}"})
    if plan.published:
        world.do(owner, lifecycle.publish_benchmark, bm)
    if plan.whitelisted:
        entries = [emails[i] for i in sorted(plan.whitelisted)]
        world.do(owner, members.add_whitelist_entries, bm, entries)
    for i in plan.collaborators - {plan.owner}:
        world.collaborator(users[plan.owner], bm, emails[i])
    for i in plan.joined:
        _attempt(world, web[i], lambda c, b=bm: members.join_benchmark(c, b, True))
    for i in plan.removed & plan.joined:
        _attempt(
            world,
            owner,
            lambda c, b=bm, u=users[i]: members.set_participant_status(c, b, u, "removed"),
        )
    for i in plan.launchers:
        _attempt(world, web[i], lambda c, b=bm: launch.start_run(c, b, FREE, None))
    if plan.deleted:
        world.do(owner, lifecycle.delete_benchmark, bm)


def _attempt(world: World, who: Principal, call: Callable[[Context], object]) -> None:
    with contextlib.suppress(BenchGenError):  # refused by the rules: the scene lacks it
        world.ctx_call(who, call)


def decided(world: World, user: str) -> tuple[set[str], set[str], set[str]]:
    """What the per-object decisions allow: readable, the user's own share, visible runs."""

    def judge(ctx: Context) -> tuple[set[str], set[str], set[str]]:
        person = access.live_user(ctx)
        assert person is not None
        benchmarks = ctx.session.scalars(select(Benchmark)).all()
        readable = {b.id for b in benchmarks if access.can(ctx, Action.BENCHMARK_READ, b)}
        near = {Role.OWNER, Role.COLLABORATOR, Role.PARTICIPANT}
        mine = {b.id for b in benchmarks if access.roles_on(ctx, person, b) & near}
        by_id = {b.id: b for b in benchmarks}
        runs = {
            run.id
            for run in ctx.session.scalars(select(Run))
            if access.can(ctx, Action.RUN_READ, by_id[run.benchmark_id], run)
        }
        return readable, mine, runs

    return world.ctx_call(Principal.web(user), judge)


def listed(world: World, user: str) -> tuple[set[str], set[str], set[str]]:
    web = Principal.web(user)
    every = {b.id for b in world.do(web, lifecycle.list_benchmarks, limit=500)}
    mine = {b.id for b in world.do(web, lifecycle.list_benchmarks, mine_only=True, limit=500)}
    runs = {r.id for r in world.do(web, launch.list_runs, limit=500)}
    return every, mine, runs


# No shrinking: each example builds a database scene, and a failure prints the scene anyway.
@settings(
    max_examples=12,
    deadline=None,
    phases=(Phase.explicit, Phase.reuse, Phase.generate),
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(scene=st.lists(plans, min_size=1, max_size=4))
def test_lists_show_exactly_what_the_decisions_allow(world: World, scene: list[Plan]) -> None:
    emails = [f"u{next(_fresh)}@example.com" for _ in range(USERS)]
    users = [world.user(email, credits_=1000) for email in emails]
    for plan in scene:
        build(world, users, emails, plan)
    for user in users:
        assert listed(world, user) == decided(world, user)


def test_a_list_filter_that_drifts_is_caught(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparison can fail: a filter that forgets collaborators disagrees with the rules."""
    owner, guest = world.user("owner@example.com"), world.user("guest@example.com")
    bm = world.benchmark(owner)
    world.collaborator(owner, bm, "guest@example.com")
    assert listed(world, guest) == decided(world, guest)
    real = access.visible_benchmarks

    def forgetful(ctx: Context, action: Action = Action.BENCHMARK_READ, public: bool = True):  # type: ignore[no-untyped-def]
        return real(ctx, action, public) & (Benchmark.owner_id == ctx.principal.user_id)

    monkeypatch.setattr(access, "visible_benchmarks", forgetful)
    assert listed(world, guest) != decided(world, guest)
