"""A participant the owner removed from a published benchmark: still free to read it as anyone
may, but not to run on it, submit to it or join it again, through any door, until the owner
lets them back; strangers' runs on it go on."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from benchgen.core.context import Principal
from benchgen.core.errors import Conflict, PermissionDenied
from benchgen.core.permissions import Action, PrincipalKind
from benchgen.db.tables import Benchmark
from benchgen.services import access
from benchgen.services.benchmarks import bundles, lifecycle, members
from benchgen.services.chat import proposals
from benchgen.services.runs import launch, retries, submissions
from tests.bundle_factory import ANSWERS, bundle, require_sandbox, results
from tests.support import MCQ, World

FREE = "mdl_builtin_random"
DOORS = (PrincipalKind.WEB, PrincipalKind.API, PrincipalKind.AGENT, PrincipalKind.CLI)
REMOVED = "the owner removed you from this benchmark"


def published(world: World, owner: str, spec: dict | None = None) -> str:
    benchmark = world.benchmark(owner, spec or MCQ)
    world.do(Principal.web(owner), lifecycle.publish_benchmark, benchmark)
    return benchmark


def join_then_remove(world: World, owner: str, benchmark: str, person: str) -> None:
    world.do(Principal.web(person), members.join_benchmark, benchmark, True)
    world.do(Principal.web(owner), members.set_participant_status, benchmark, person, "removed")


@pytest.mark.parametrize("kind", DOORS)
def test_a_removed_participant_cannot_run_on_a_published_benchmark(
    world: World, kind: PrincipalKind
) -> None:
    ana = world.user("ana@example.com")
    bob = world.user("bob@example.com", credits_=100)
    cy = world.user("cy@example.com", credits_=100)
    benchmark = published(world, ana)
    world.do(Principal.web(bob), members.join_benchmark, benchmark, True)
    earlier = world.do(Principal.web(bob), launch.start_run, benchmark, FREE)
    world.do(Principal.web(ana), members.set_participant_status, benchmark, bob, "removed")
    who = world.principal(kind, bob)
    with pytest.raises(PermissionDenied, match=REMOVED):
        world.do(who, launch.start_run, benchmark, FREE)
    with pytest.raises(PermissionDenied, match=REMOVED):
        world.do(who, retries.retry_errored, earlier.id)
    if kind is PrincipalKind.AGENT:  # the run is not even proposed
        arguments = {"benchmark_id": benchmark, "model_id": FREE}
        with pytest.raises(PermissionDenied, match=REMOVED):
            world.do(who, proposals.propose, "conv_removed", "start_run", arguments)
    # Reading stays open, as to anyone; so do their own run and a stranger's runs.
    assert world.do(who, lifecycle.get_benchmark, benchmark).id == benchmark
    assert world.do(who, launch.get_run, earlier.id).id == earlier.id
    assert world.do(Principal.web(cy), launch.start_run, benchmark, FREE).launched_by == cy


def test_the_owner_letting_them_back_lets_them_run_again(world: World) -> None:
    ana = world.user("ana@example.com")
    bob = world.user("bob@example.com", credits_=100)
    benchmark = published(world, ana)
    join_then_remove(world, ana, benchmark, bob)
    with pytest.raises(Conflict, match="removed you"):
        world.do(Principal.web(bob), members.join_benchmark, benchmark, True)
    world.do(Principal.web(ana), members.set_participant_status, benchmark, bob, "active")
    assert world.do(Principal.web(bob), launch.start_run, benchmark, FREE).launched_by == bob


def test_a_removed_participant_who_collaborates_still_runs(world: World) -> None:
    ana = world.user("ana@example.com")
    bob = world.user("bob@example.com", credits_=100)
    benchmark = published(world, ana)
    join_then_remove(world, ana, benchmark, bob)
    world.collaborator(ana, benchmark, "bob@example.com")
    assert world.do(Principal.web(bob), launch.start_run, benchmark, FREE).launched_by == bob


@pytest.mark.parametrize("kind", DOORS)
def test_a_removed_participant_cannot_submit(world: World, kind: PrincipalKind) -> None:
    require_sandbox()
    ana = world.user("ana@example.com")
    bob = world.user("bob@example.com")
    made = world.do(Principal.web(ana), bundles.upload_bundle, bundle(), "tiny.zip")
    benchmark = made.benchmark.id
    world.do(Principal.web(ana), lifecycle.publish_benchmark, benchmark)
    join_then_remove(world, ana, benchmark, bob)
    with pytest.raises(PermissionDenied, match=REMOVED):
        world.do(
            world.principal(kind, bob), submissions.submit, benchmark, results(ANSWERS), "a.zip"
        )
    assert world.do(Principal.web(ana), launch.list_runs, benchmark) == []


def test_lists_of_what_one_may_join_leave_out_where_one_was_removed(world: World) -> None:
    """The SQL twin of the decision agrees with it for a removed participant."""
    ana = world.user("ana@example.com")
    bob = world.user("bob@example.com")
    removed_from = published(world, ana)
    open_to_bob = published(world, ana, {**MCQ, "title": "Other"})
    join_then_remove(world, ana, removed_from, bob)

    def both(action: Action) -> tuple[set[str], set[str]]:
        def judge(ctx):  # type: ignore[no-untyped-def]
            rows = ctx.session.scalars(select(Benchmark)).all()
            allowed = {b.id for b in rows if access.can(ctx, action, b)}
            listed = set(
                ctx.session.scalars(
                    select(Benchmark.id).where(access.visible_benchmarks(ctx, action))
                )
            )
            return allowed, listed

        return world.ctx_call(Principal.web(bob), judge)

    for action in (Action.RUN_LAUNCH, Action.BENCHMARK_JOIN):
        allowed, listed = both(action)
        assert allowed == listed == {open_to_bob}, action
    allowed, listed = both(Action.BENCHMARK_READ)
    assert allowed == listed == {removed_from, open_to_bob}
