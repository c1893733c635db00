"""A unit of work asks for a user's memberships on a benchmark once, and forgets the answer as
soon as it writes: a join, a removal or an undone change counts at the very next decision."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from benchgen.core.context import Context, Principal
from benchgen.core.errors import Conflict
from benchgen.core.permissions import Role
from benchgen.db.tables import Benchmark, User
from benchgen.services import access
from benchgen.services.benchmarks import invitations, lifecycle, members
from benchgen.services.runtime import Runtime, undo_on_error
from tests.support import MCQ, World, sql_sent


@pytest.fixture
def backend() -> str:
    return "sqlite"  # counts statements; the same queries run on PostgreSQL


@contextmanager
def membership_queries(runtime: Runtime) -> Iterator[list[str]]:
    """The statements that read the membership tables while the block runs."""
    with sql_sent(runtime) as statements:
        yield statements
    statements[:] = [s for s in statements if "FROM collaborators" in s]


def roles_of(ctx: Context, user_id: str, benchmark_id: str) -> frozenset[Role]:
    user, benchmark = ctx.session.get(User, user_id), ctx.session.get(Benchmark, benchmark_id)
    assert user is not None and benchmark is not None
    return access.roles_on(ctx, user, benchmark)


def test_deciding_twice_on_one_benchmark_asks_once(world: World) -> None:
    ana = world.user("ana@example.com")
    bm = world.benchmark(ana, MCQ)
    who = world.api(world.token(ana, ["read"]))
    with membership_queries(world.rt) as seen:
        # The check, then the view's roles and its key decision, three times over.
        world.do(who, lambda ctx: [lifecycle.get_benchmark(ctx, bm) for _ in range(3)])
    assert len(seen) == 1, seen


def test_a_join_counts_within_the_same_unit_of_work(world: World) -> None:
    ana, bob = world.user("ana@example.com"), world.user("bob@example.com")
    bm = world.benchmark(ana, MCQ)
    world.do(Principal.web(ana), members.add_whitelist_entries, bm, ["bob@example.com"])

    def join(ctx: Context) -> tuple[frozenset[Role], frozenset[Role]]:
        before = roles_of(ctx, bob, bm)
        members.join_benchmark(ctx, bm, accept_terms=True)
        return before, roles_of(ctx, bob, bm)

    before, after = world.ctx_call(Principal.web(bob), join)
    assert before == {Role.INVITEE}
    assert after == {Role.PARTICIPANT}


def test_a_removal_counts_within_the_same_unit_of_work(world: World) -> None:
    ana, bob = world.user("ana@example.com"), world.user("bob@example.com")
    bm = world.benchmark(ana, MCQ)
    world.collaborator(ana, bm, "bob@example.com")

    def remove(ctx: Context) -> tuple[frozenset[Role], frozenset[Role]]:
        before = roles_of(ctx, bob, bm)
        members.remove_collaborator(ctx, bm, bob)
        return before, roles_of(ctx, bob, bm)

    before, after = world.ctx_call(Principal.web(ana), remove)
    assert before == {Role.COLLABORATOR}
    assert after == frozenset()


def test_an_undone_change_is_forgotten(world: World) -> None:
    ana, bob = world.user("ana@example.com"), world.user("bob@example.com")
    bm = world.benchmark(ana, MCQ)
    world.do(Principal.web(ana), invitations.invite_collaborator, bm, "bob@example.com")
    (secret,) = world.invitations("bob@example.com")

    def add_then_undo(ctx: Context) -> tuple[frozenset[Role], frozenset[Role]]:
        during = frozenset[Role]()
        with pytest.raises(Conflict), undo_on_error(ctx):
            invitations.accept_invitation(ctx, secret)
            ctx.session.flush()
            during = roles_of(ctx, bob, bm)  # remembered, then undone with the savepoint
            raise Conflict("changed my mind")
        return during, roles_of(ctx, bob, bm)

    during, after = world.ctx_call(Principal.web(bob), add_then_undo)
    assert during == {Role.COLLABORATOR}
    assert after == frozenset()


def test_the_next_unit_of_work_asks_again(world: World) -> None:
    ana, bob = world.user("ana@example.com"), world.user("bob@example.com")
    bm = world.benchmark(ana, MCQ)
    assert world.ctx_call(Principal.web(bob), lambda ctx: roles_of(ctx, bob, bm)) == set()
    world.collaborator(ana, bm, "bob@example.com")
    with membership_queries(world.rt) as seen:
        roles = world.ctx_call(Principal.web(bob), lambda ctx: roles_of(ctx, bob, bm))
    assert roles == {Role.COLLABORATOR}
    assert len(seen) == 1
