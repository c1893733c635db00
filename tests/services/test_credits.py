"""Credits: grants, reservations, settling, refunds, the cursor, and concurrent spending."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any

import pytest
from sqlalchemy import event, func, select

from benchgen.core.clock import ManualClock
from benchgen.core.context import Principal
from benchgen.core.errors import (
    Conflict,
    InsufficientCredits,
    InvalidInput,
    NotFound,
    PermissionDenied,
)
from benchgen.core.permissions import PrincipalKind, Scope
from benchgen.db.tables import CreditEntry
from benchgen.services.accounts import _ledger, credits, users
from benchgen.services.runtime import Runtime, transaction
from tests.support import OPERATOR, World, at_once

# row locks on balances, concurrent reservers, the ledger cursor
pytestmark = pytest.mark.both_backends


def balance(world: World, user_id: str) -> int:
    return world.ctx_call(OPERATOR, lambda ctx: _ledger.balance_of(ctx, user_id))


def ledger_rows(world: World, user_id: str | None = None) -> list[tuple[Any, ...]]:
    """Every ledger row as a plain tuple, oldest first."""

    def read(ctx: Any) -> list[tuple[Any, ...]]:
        query = select(CreditEntry).order_by(CreditEntry.created_at, CreditEntry.id)
        if user_id is not None:
            query = query.where(CreditEntry.user_id == user_id)
        return [
            (r.id, r.user_id, r.kind, r.amount, r.reservation_id, r.reference, r.note, r.door)
            for r in ctx.session.scalars(query)
        ]

    return world.ctx_call(OPERATOR, read)


@contextmanager
def ledger_writes(runtime: Runtime) -> Iterator[list[str]]:
    """Every INSERT/UPDATE/DELETE statement that touches the ledger while the block runs."""
    seen: list[str] = []

    def watch(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        words = statement.lstrip().split(None, 1)
        if "credit_ledger" in statement and words and words[0].upper() != "SELECT":
            seen.append(statement)

    event.listen(runtime.database.engine, "before_cursor_execute", watch)
    try:
        yield seen
    finally:
        event.remove(runtime.database.engine, "before_cursor_execute", watch)


# --- grant --------------------------------------------------------------------------------


def test_operator_grants(world: World, clock: ManualClock) -> None:
    ana = world.user("ana@example.com")
    assert world.do(OPERATOR, credits.grant_credits, ana, 100, "welcome") == 100
    clock.advance(seconds=1)
    assert world.do(OPERATOR, credits.grant_credits, ana, 50) == 150
    assert world.do(Principal.web(ana), credits.get_balance) == 150
    [first, _] = ledger_rows(world, ana)
    assert (first[2], first[3], first[6], first[7]) == ("grant", 100, "welcome", "cli")


def test_admin_grants(world: World) -> None:
    boss = world.user("boss@example.com", admin=True)
    ana = world.user("ana@example.com")
    assert world.do(Principal.web(boss), credits.grant_credits, ana, 7) == 7
    [row] = ledger_rows(world, ana)
    assert row[7] == "web"


@pytest.mark.parametrize("kind", [PrincipalKind.WEB, PrincipalKind.CLI, PrincipalKind.API])
def test_non_admin_cannot_grant(world: World, kind: PrincipalKind) -> None:
    ana = world.user("ana@example.com")
    with pytest.raises(PermissionDenied):
        world.do(world.principal(kind, ana), credits.grant_credits, ana, 100)
    assert balance(world, ana) == 0


@pytest.mark.parametrize("kind", [PrincipalKind.API, PrincipalKind.AGENT])
def test_admin_token_cannot_grant(world: World, kind: PrincipalKind) -> None:
    boss = world.user("boss@example.com", admin=True)
    with pytest.raises(PermissionDenied):
        world.do(world.principal(kind, boss), credits.grant_credits, boss, 100)
    assert balance(world, boss) == 0


@pytest.mark.both_backends  # PostgreSQL's integer column refused 2**31 with a 500
@pytest.mark.parametrize("amount", [0, -1, -100, True, False, 1.5, "10", None, 2**31, 10**12])
def test_grant_rejects_bad_amounts(world: World, amount: Any) -> None:
    ana = world.user("ana@example.com")
    with pytest.raises(InvalidInput) as err:
        world.do(OPERATOR, credits.grant_credits, ana, amount)
    assert err.value.errors[0]["loc"] == ["amount"]
    assert ledger_rows(world) == []


def test_grant_to_unknown_user(world: World) -> None:
    with pytest.raises(NotFound):
        world.do(OPERATOR, credits.grant_credits, "usr_nobody", 10)
    assert ledger_rows(world) == []


def test_admins_list_balances_of_several_accounts(world: World) -> None:
    ana = world.user("ana@example.com", credits_=100)
    bo = world.user("bo@example.com")
    root = world.user("root@example.com", admin=True)
    found = world.do(Principal.web(root), credits.list_balances, [ana, bo, "usr_nobody"])
    assert found == {ana: 100, bo: 0, "usr_nobody": 0}
    assert world.do(OPERATOR, credits.list_balances, []) == {}
    with pytest.raises(PermissionDenied):
        world.do(Principal.web(ana), credits.list_balances, [ana])
    with pytest.raises(InvalidInput):
        world.do(OPERATOR, credits.list_balances, [ana] * (users.MAX_USER_PAGE + 1))


# --- reserve, settle, refund --------------------------------------------------------------


def test_reserve_beyond_balance_writes_nothing(world: World, runtime: Runtime) -> None:
    ana = world.user("ana@example.com", credits_=100)
    before = ledger_rows(world)
    with transaction(runtime, Principal.web(ana)) as ctx, ledger_writes(runtime) as writes:
        with pytest.raises(InsufficientCredits) as err:
            _ledger.reserve_credits(ctx, 101, "run_1")
        # Checked inside the still-open transaction: the refusal itself added nothing.
        assert writes == []
        assert _ledger.balance_of(ctx, ana) == 100
    assert err.value.details == {"needed": 101, "balance": 100}
    assert ledger_rows(world) == before


def test_reserve_whole_balance_and_zero(world: World) -> None:
    ana = world.user("ana@example.com", credits_=100)
    world.do(Principal.web(ana), _ledger.reserve_credits, 100, "run_1")
    assert balance(world, ana) == 0
    world.do(Principal.web(ana), _ledger.reserve_credits, 0, "run_free")
    with pytest.raises(InsufficientCredits):
        world.do(Principal.web(ana), _ledger.reserve_credits, 1, "run_2")
    assert balance(world, ana) == 0


@pytest.mark.both_backends
def test_reserve_rejects_bad_amounts(world: World) -> None:
    ana = world.user("ana@example.com", credits_=100)
    with pytest.raises(InvalidInput):
        world.do(Principal.web(ana), _ledger.reserve_credits, -1, "run_1")
    # More than anyone may hold at once, for a user who has far less: they lack credits.
    with pytest.raises(InsufficientCredits):
        world.do(Principal.web(ana), _ledger.reserve_credits, 2**31, "run_1")
    assert balance(world, ana) == 100


def test_a_balance_that_covers_more_than_one_job_may_hold_is_refused_clearly(
    world: World,
) -> None:
    ana = world.user("ana@example.com", credits_=_ledger.MAX_AMOUNT)
    world.do(OPERATOR, credits.grant_credits, ana, 10)
    with pytest.raises(Conflict, match="At most 2,147,483,647 credits"):
        world.do(Principal.web(ana), _ledger.reserve_credits, 2**31, "run_1")
    assert balance(world, ana) == _ledger.MAX_AMOUNT + 10


def test_settle_at_lower_cost_frees_the_rest(world: World) -> None:
    ana = world.user("ana@example.com", credits_=100)
    held = world.do(Principal.web(ana), _ledger.reserve_credits, 60, "run_1")
    assert balance(world, ana) == 40
    assert world.do(OPERATOR, _ledger.settle_credits, held, 25) == 35
    assert balance(world, ana) == 75
    [settle] = [row for row in ledger_rows(world, ana) if row[2] == "settle"]
    assert (settle[2], settle[3], settle[4], settle[5]) == ("settle", 35, held, "run_1")


def test_settle_at_exact_cost_frees_nothing(world: World) -> None:
    ana = world.user("ana@example.com", credits_=100)
    held = world.do(Principal.web(ana), _ledger.reserve_credits, 60, "run_1")
    assert world.do(OPERATOR, _ledger.settle_credits, held, 60) == 0
    assert balance(world, ana) == 40


def test_settle_above_reserved_is_capped(world: World) -> None:
    ana = world.user("ana@example.com", credits_=100)
    held = world.do(Principal.web(ana), _ledger.reserve_credits, 60, "run_1")
    assert world.do(OPERATOR, _ledger.settle_credits, held, 500) == 0
    assert balance(world, ana) == 40


def test_settle_negative_cost_counts_as_free(world: World) -> None:
    ana = world.user("ana@example.com", credits_=100)
    held = world.do(Principal.web(ana), _ledger.reserve_credits, 60, "run_1")
    assert world.do(OPERATOR, _ledger.settle_credits, held, -30) == 60
    assert balance(world, ana) == 100


def test_refund_returns_everything(world: World) -> None:
    ana = world.user("ana@example.com", credits_=100)
    held = world.do(Principal.web(ana), _ledger.reserve_credits, 60, "run_1")
    assert world.do(OPERATOR, _ledger.refund_credits, held, "worker crashed") == 60
    assert balance(world, ana) == 100
    [refund] = [row for row in ledger_rows(world, ana) if row[2] == "refund"]
    assert (refund[2], refund[3], refund[4], refund[6]) == ("refund", 60, held, "worker crashed")


@pytest.mark.parametrize(
    ("first", "second"),
    [("settle", "settle"), ("settle", "refund"), ("refund", "refund"), ("refund", "settle")],
)
def test_closing_twice_is_a_conflict(world: World, first: str, second: str) -> None:
    ana = world.user("ana@example.com", credits_=100)
    held = world.do(Principal.web(ana), _ledger.reserve_credits, 60, "run_1")

    def close(how: str) -> int:
        if how == "settle":
            return world.do(OPERATOR, _ledger.settle_credits, held, 10)
        return world.do(OPERATOR, _ledger.refund_credits, held, "failed")

    close(first)
    after_first = balance(world, ana)
    with pytest.raises(Conflict):
        close(second)
    assert balance(world, ana) == after_first


def test_closing_something_that_is_not_a_reservation(world: World) -> None:
    ana = world.user("ana@example.com", credits_=100)
    [grant] = ledger_rows(world, ana)
    with pytest.raises(NotFound):
        world.do(OPERATOR, _ledger.settle_credits, grant[0], 0)
    with pytest.raises(NotFound):
        world.do(OPERATOR, _ledger.refund_credits, "cr_nothing", "x")
    assert balance(world, ana) == 100


@pytest.mark.parametrize("amount", [30, 7, 100, 101])
def test_concurrent_reservers_never_overdraw(world: World, amount: int) -> None:
    start = 100
    ana = world.user("ana@example.com", credits_=start)
    threads_count = 10
    web = Principal.web(ana)
    outcomes = at_once(
        [
            partial(world.do, web, _ledger.reserve_credits, amount, f"run_{i}")
            for i in range(threads_count)
        ]
    )

    succeeded = [o for o in outcomes if isinstance(o, str)]
    refused = [o for o in outcomes if isinstance(o, InsufficientCredits)]
    assert len(succeeded) + len(refused) == threads_count, outcomes  # no database errors
    expected = min(start // amount, threads_count)
    assert len(succeeded) == expected
    assert balance(world, ana) == start - expected * amount
    assert balance(world, ana) >= 0


# --- ledger -------------------------------------------------------------------------------


def test_ledger_pages_with_before_cursor(world: World, clock: ManualClock) -> None:
    ana = world.user("ana@example.com")
    for amount in range(1, 6):
        world.do(OPERATOR, credits.grant_credits, ana, amount)
        clock.advance(seconds=1)
    me = Principal.web(ana)
    page = world.do(me, credits.list_ledger, 2)
    assert [line.amount for line in page] == [5, 4]
    page = world.do(me, credits.list_ledger, 2, page[-1].id)
    assert [line.amount for line in page] == [3, 2]
    page = world.do(me, credits.list_ledger, 2, page[-1].id)
    assert [line.amount for line in page] == [1]
    assert world.do(me, credits.list_ledger, 2, page[-1].id) == []


def test_ledger_cursor_breaks_ties_on_equal_times(world: World) -> None:
    ana = world.user("ana@example.com")
    for amount in range(1, 8):  # the clock does not move: every line has the same time
        world.do(OPERATOR, credits.grant_credits, ana, amount)
    me = Principal.web(ana)
    everything = world.do(me, credits.list_ledger, 500)
    seen: list[str] = []
    cursor = None
    while True:
        page = world.do(me, credits.list_ledger, 3, cursor)
        if not page:
            break
        seen += [line.id for line in page]
        cursor = page[-1].id
    assert seen == [line.id for line in everything]
    assert sorted(line.amount for line in everything) == list(range(1, 8))


def test_ledger_is_private_and_validated(world: World) -> None:
    ana = world.user("ana@example.com", credits_=10)
    bob = world.user("bob@example.com", credits_=20)
    [bobs] = world.do(Principal.web(bob), credits.list_ledger)
    assert [line.amount for line in world.do(Principal.web(ana), credits.list_ledger)] == [10]
    with pytest.raises(InvalidInput):
        world.do(Principal.web(ana), credits.list_ledger, 10, bobs.id)
    with pytest.raises(InvalidInput):
        world.do(Principal.web(ana), credits.list_ledger, 10, "cr_unknown")
    for limit in (0, 1001):
        with pytest.raises(InvalidInput):
            world.do(Principal.web(ana), credits.list_ledger, limit)


def test_token_with_read_scope_sees_balance(world: World) -> None:
    ana = world.user("ana@example.com", credits_=10)
    reader = world.principal(PrincipalKind.API, ana, frozenset({Scope.READ}))
    assert world.do(reader, credits.get_balance) == 10
    runs_only = world.principal(PrincipalKind.API, ana, frozenset({Scope.RUNS}))
    with pytest.raises(PermissionDenied):
        world.do(runs_only, credits.get_balance)


def test_ledger_is_only_appended_to(world: World, runtime: Runtime, clock: ManualClock) -> None:
    ana = world.user("ana@example.com")
    with ledger_writes(runtime) as writes:
        world.do(OPERATOR, credits.grant_credits, ana, 100)
        snapshots = [ledger_rows(world)]
        clock.advance(seconds=1)
        held = world.do(Principal.web(ana), _ledger.reserve_credits, 40, "run_1")
        snapshots.append(ledger_rows(world))
        clock.advance(seconds=1)
        world.do(OPERATOR, _ledger.settle_credits, held, 30)
        snapshots.append(ledger_rows(world))
        clock.advance(seconds=1)
        other = world.do(Principal.web(ana), _ledger.reserve_credits, 20, "run_2")
        snapshots.append(ledger_rows(world))
        clock.advance(seconds=1)
        world.do(OPERATOR, _ledger.refund_credits, other, "failed")
        snapshots.append(ledger_rows(world))
        with pytest.raises(Conflict):
            world.do(OPERATOR, _ledger.refund_credits, other, "again")
        snapshots.append(ledger_rows(world))

    assert all(statement.lstrip().upper().startswith("INSERT") for statement in writes), writes
    for earlier, later in itertools.pairwise(snapshots):
        assert later[: len(earlier)] == earlier  # nothing before was changed or removed
    assert [len(snapshot) for snapshot in snapshots] == [1, 2, 3, 4, 5, 5]
    kinds = [row[2] for row in snapshots[-1]]
    assert kinds == ["grant", "reserve", "settle", "reserve", "refund"]
    total = world.ctx_call(
        OPERATOR, lambda ctx: ctx.session.scalar(select(func.sum(CreditEntry.amount)))
    )
    assert total == balance(world, ana) == 100 - 30


@pytest.mark.parametrize("backend", ["postgres"])
def test_rows_referencing_a_user_do_not_deadlock_its_lock(world: World) -> None:
    """Two units of work each write a row that references ana (a foreign-key check holds a key
    share on her row) and then lock her to spend: the second waits for the first instead of
    the pair deadlocking, as two runs of one user finishing at once did with four workers."""
    ana = world.user("ana@example.com", credits_=100)
    both_wrote = threading.Barrier(2)
    errors: list[BaseException] = []

    def write_then_lock(index: int) -> None:
        try:
            with transaction(world.rt, OPERATOR) as ctx:
                _ledger.append_entry(ctx, ana, "grant", 1, reference=f"ref_{index}")
                both_wrote.wait(10)
                users.lock_user(ctx, ana)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=write_then_lock, args=(n,)) for n in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert errors == []
    assert balance(world, ana) == 102


@pytest.mark.both_backends
def test_the_largest_grant_is_kept_and_balances_grow_past_it(world: World) -> None:
    ana = world.user("ana@example.com")
    for _ in range(2):
        world.do(OPERATOR, credits.grant_credits, ana, _ledger.MAX_AMOUNT)
    assert balance(world, ana) == 2 * _ledger.MAX_AMOUNT
