"""Run quotas for people outside a benchmark's team: rolling day, every door, owner's override,
session-only setting, and no overshoot under concurrent launches."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from functools import partial
from typing import Any

import pytest
from sqlalchemy import func, select
from typer.testing import CliRunner

from benchgen.cli import app
from benchgen.core.clock import ManualClock, iso_utc
from benchgen.core.config import Settings
from benchgen.core.context import Context, Principal
from benchgen.core.errors import InvalidInput, PermissionDenied, RateLimited
from benchgen.core.permissions import PrincipalKind
from benchgen.db.tables import AuditEvent, RateLimitEvent, Run
from benchgen.services.accounts import ratelimits
from benchgen.services.benchmarks import lifecycle, members
from benchgen.services.runs import launch
from benchgen.services.runtime import Runtime
from tests.support import MCQ, OPERATOR, World, at_once

pytestmark = pytest.mark.both_backends  # rolling windows in SQL and concurrent launches

FREE_MODEL = "mdl_builtin_first"
DEFAULT = 5


@dataclass(frozen=True)
class Scene:
    """Ana owns a published benchmark; Col collaborates on it; Sam is a stranger to it."""

    owner: str
    collaborator: str
    stranger: str
    benchmark: str


@pytest.fixture
def scene(world: World) -> Scene:
    owner = world.user("ana@example.com")
    collaborator = world.user("col@example.com")
    stranger = world.user("sam@example.com")
    benchmark = world.benchmark(owner, MCQ)
    world.do(Principal.web(owner), lifecycle.publish_benchmark, benchmark)
    world.collaborator(owner, benchmark, "col@example.com")
    return Scene(owner, collaborator, stranger, benchmark)


def start(world: World, principal: Principal, benchmark: str) -> str:
    return world.do(principal, launch.start_run, benchmark, FREE_MODEL).id


def count(world: World, table: Any) -> int:
    return world.ctx_call(OPERATOR, lambda ctx: ctx.session.scalar(select(func.count(table.id))))


def set_quota(world: World, principal: Principal, benchmark: str, value: int | None) -> int:
    return world.do(principal, ratelimits.set_run_quota, benchmark, value)


def test_sixth_run_in_a_day_is_refused_until_the_first_leaves_the_window(
    world: World, scene: Scene, clock: ManualClock
) -> None:
    sam = Principal.web(scene.stranger)
    first = clock.now()
    for _ in range(DEFAULT):
        start(world, sam, scene.benchmark)
        clock.advance(hours=1)
    with pytest.raises(RateLimited) as refused:
        start(world, sam, scene.benchmark)
    assert refused.value.retry_at == first + timedelta(days=1)
    assert (refused.value.limit, refused.value.window) == (DEFAULT, "day")
    assert refused.value.details["retry_at"] == iso_utc(first + timedelta(days=1))
    assert refused.value.details["benchmark_id"] == scene.benchmark
    assert "allowed again at 2026-01-02 00:00:00 UTC" in refused.value.message
    assert count(world, Run) == DEFAULT

    # One moment before retry_at still refused; at retry_at the first run has left the window.
    clock.advance(hours=24 - DEFAULT, microseconds=-1)
    with pytest.raises(RateLimited):
        start(world, sam, scene.benchmark)
    clock.advance(microseconds=1)
    assert clock.now() == first + timedelta(days=1)
    start(world, sam, scene.benchmark)
    with pytest.raises(RateLimited) as refused:
        start(world, sam, scene.benchmark)
    assert refused.value.retry_at == first + timedelta(days=1, hours=1)
    assert count(world, Run) == DEFAULT + 1


def test_every_door_counts_together_per_user_and_benchmark(world: World, scene: Scene) -> None:
    sam = scene.stranger
    doors = [
        world.principal(kind, sam) for kind in PrincipalKind if kind is not PrincipalKind.SYSTEM
    ]
    for index in range(DEFAULT):
        start(world, doors[index % len(doors)], scene.benchmark)
    for door in doors:
        with pytest.raises(RateLimited):
            start(world, door, scene.benchmark)
    # Another published benchmark has its own quota, and another stranger their own.
    other = world.benchmark(scene.owner, MCQ)
    world.do(Principal.web(scene.owner), lifecycle.publish_benchmark, other)
    start(world, Principal.web(sam), other)
    start(world, Principal.web(world.user("tim@example.com")), scene.benchmark)


def test_owner_and_collaborators_are_not_limited(world: World, scene: Scene) -> None:
    for user in (scene.owner, scene.collaborator):
        for kind in (PrincipalKind.WEB, PrincipalKind.API, PrincipalKind.AGENT):
            for _ in range(3):
                start(world, world.principal(kind, user), scene.benchmark)
    assert count(world, Run) == 18
    assert count(world, RateLimitEvent) == 0
    assert world.do(Principal.web(scene.owner), ratelimits.run_quota, scene.benchmark) is None


def test_participants_are_strangers_too(world: World, clock: ManualClock) -> None:
    """A whitelisted participant of a private benchmark never sees its key either."""
    owner = world.user("ana@example.com")
    pia = world.user("pia@example.com")
    private = world.benchmark(owner, MCQ)
    world.do(Principal.web(owner), members.add_whitelist_entries, private, ["pia@example.com"])
    world.do(Principal.web(pia), members.join_benchmark, private, True)
    first = clock.now()
    for _ in range(DEFAULT):
        start(world, Principal.web(pia), private)
    with pytest.raises(RateLimited) as refused:
        start(world, world.principal(PrincipalKind.API, pia), private)
    assert refused.value.retry_at == first + timedelta(days=1)


def test_quota_report_for_a_stranger(world: World, scene: Scene, clock: ManualClock) -> None:
    sam = Principal.web(scene.stranger)
    first = clock.now()
    start(world, sam, scene.benchmark)
    clock.advance(minutes=5)
    start(world, sam, scene.benchmark)
    report = world.do(sam, ratelimits.run_quota, scene.benchmark)
    assert report == ratelimits.Quota(DEFAULT, DEFAULT - 2, first + timedelta(days=1), "day")


def test_owner_override_and_deployment_default(
    world: World, scene: Scene, runtime: Runtime
) -> None:
    owner, sam = Principal.web(scene.owner), Principal.web(scene.stranger)
    assert set_quota(world, owner, scene.benchmark, 2) == 2
    for _ in range(2):
        start(world, sam, scene.benchmark)
    with pytest.raises(RateLimited) as refused:
        start(world, sam, scene.benchmark)
    assert refused.value.limit == 2

    assert set_quota(world, Principal.cli(scene.owner), scene.benchmark, 7) == 7
    for _ in range(5):
        start(world, sam, scene.benchmark)
    with pytest.raises(RateLimited) as refused:
        start(world, sam, scene.benchmark)
    assert refused.value.limit == 7

    # Back to the deployment's default, which the operator's environment sets.
    runtime.settings = runtime.settings.model_copy(update={"stranger_runs_per_day": 9})
    assert set_quota(world, owner, scene.benchmark, None) == 9
    for _ in range(2):
        start(world, sam, scene.benchmark)
    with pytest.raises(RateLimited) as refused:
        start(world, sam, scene.benchmark)
    assert refused.value.limit == 9

    def changes(ctx: Context) -> list[dict[str, Any]]:
        query = select(AuditEvent.details).where(AuditEvent.action == "benchmark.run_quota")
        return list(ctx.session.scalars(query.order_by(AuditEvent.at, AuditEvent.id)))

    recorded = world.ctx_call(OPERATOR, changes)
    assert {(c["before"], c["after"]) for c in recorded} == {(None, 2), (2, 7), (7, None)}


def test_only_the_owner_in_a_session_sets_the_quota(world: World, scene: Scene) -> None:
    owner = scene.owner
    for kind in (PrincipalKind.API, PrincipalKind.AGENT):
        with pytest.raises(PermissionDenied) as refused:
            set_quota(world, world.principal(kind, owner), scene.benchmark, 100)
        assert refused.value.details["page"] == f"/benchmarks/{scene.benchmark}/settings"
    for user in (scene.collaborator, scene.stranger):
        with pytest.raises(PermissionDenied):
            set_quota(world, Principal.web(user), scene.benchmark, 100)
    with pytest.raises(PermissionDenied):
        set_quota(world, OPERATOR, scene.benchmark, 100)
    for bad in (0, -1, ratelimits.MAX_RUN_QUOTA + 1):
        with pytest.raises(InvalidInput):
            set_quota(world, Principal.web(owner), scene.benchmark, bad)
    # Nothing changed: the stranger still has the default.
    sam = Principal.web(scene.stranger)
    assert world.do(sam, ratelimits.run_quota, scene.benchmark).limit == DEFAULT  # type: ignore[union-attr]


def test_refused_and_rolled_back_launches_do_not_count(world: World, scene: Scene) -> None:
    sam = Principal.web(scene.stranger)

    class Boom(Exception):
        pass

    def launch_then_fail(ctx: Context) -> None:
        launch.start_run(ctx, scene.benchmark, FREE_MODEL)
        raise Boom

    for _ in range(DEFAULT + 1):
        with pytest.raises(Boom):
            world.ctx_call(sam, launch_then_fail)
    assert count(world, RateLimitEvent) == 0
    for _ in range(DEFAULT):
        start(world, sam, scene.benchmark)
    with pytest.raises(RateLimited):
        start(world, sam, scene.benchmark)
    assert count(world, RateLimitEvent) == DEFAULT


@pytest.mark.parametrize("launchers", [12])
def test_concurrent_launches_cannot_overshoot(
    world: World, scene: Scene, clock: ManualClock, launchers: int
) -> None:
    sam = world.principal(PrincipalKind.API, scene.stranger)
    outcomes = at_once([partial(start, world, sam, scene.benchmark)] * launchers)
    made = [o for o in outcomes if isinstance(o, str)]
    limited = [o for o in outcomes if isinstance(o, RateLimited)]
    assert [o for o in outcomes if not isinstance(o, str | RateLimited)] == []
    assert (len(made), len(limited)) == (DEFAULT, launchers - DEFAULT)
    assert {o.retry_at for o in limited} == {clock.now() + timedelta(days=1)}
    assert count(world, Run) == DEFAULT
    assert count(world, RateLimitEvent) == DEFAULT


# --- the operator's CLI, acting --as the owner ------------------------------------------------


@pytest.fixture
def cli_env(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Point the CLI (which reads BENCHGEN_* variables) at the test's database."""
    monkeypatch.setenv("BENCHGEN_DATA_DIR", str(settings.data_dir))
    monkeypatch.setenv("BENCHGEN_DATABASE_URL", settings.resolved_database_url())
    yield


def test_cli_sets_the_quota_as_the_owner(world: World, scene: Scene, cli_env: None) -> None:
    runner = CliRunner()

    def admin(*args: str) -> Any:
        return runner.invoke(app, ["admin", "set-run-quota", *args])

    done = admin(scene.benchmark, "1", "--as", "ana@example.com")
    assert done.exit_code == 0, done.output
    assert "1 per user per day (set for this benchmark)" in done.output
    start(world, Principal.web(scene.stranger), scene.benchmark)
    with pytest.raises(RateLimited):
        start(world, Principal.web(scene.stranger), scene.benchmark)

    refused = admin(scene.benchmark, "50", "--as", "col@example.com")
    assert refused.exit_code == 1 and "Not allowed" in refused.output
    assert admin(scene.benchmark, "many", "--as", "ana@example.com").exit_code == 2
    reset = admin(scene.benchmark, "default", "--as", "ana@example.com")
    assert reset.exit_code == 0 and f"{DEFAULT} per user per day" in reset.output
    start(world, Principal.web(scene.stranger), scene.benchmark)
