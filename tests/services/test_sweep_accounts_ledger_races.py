"""The credit ledger under admins granting while its holder spends, and an account disabled
while it spends: every outcome is a grant, a reservation or a refusal, and the balance adds up."""

from __future__ import annotations

from functools import partial

import pytest

from benchgen.core.context import Principal
from benchgen.core.errors import InsufficientCredits, Unauthenticated
from benchgen.services.accounts import _ledger, credits, users
from tests.support import OPERATOR, World, at_once


@pytest.mark.both_backends
def test_grants_and_reservations_at_once_add_up(world: World) -> None:
    admin = Principal.web(world.user("root@example.com", admin=True))
    ana = world.user("ana@example.com", credits_=5)
    web = Principal.web(ana)
    grants = [partial(world.do, admin, credits.grant_credits, ana, 3, f"g{i}") for i in range(6)]
    spends = [partial(world.do, web, _ledger.reserve_credits, 4, f"run_{i}") for i in range(6)]
    outcomes = at_once([*grants, *spends])
    granted = [o for o in outcomes if isinstance(o, int)]
    reserved = [o for o in outcomes if isinstance(o, str)]
    refused = [o for o in outcomes if isinstance(o, InsufficientCredits)]
    assert len(granted) == 6 and len(reserved) + len(refused) == 6, outcomes
    assert world.do(web, credits.get_balance) == 5 + 18 - 4 * len(reserved) >= 0
    lines = world.do(web, credits.list_ledger, 100)
    assert sum(line.amount for line in lines) == world.do(web, credits.get_balance)


@pytest.mark.both_backends
def test_reservations_racing_the_disabling_leave_no_hold_on_a_disabled_account(
    world: World,
) -> None:
    ana = world.user("ana@example.com", credits_=100)
    web = Principal.web(ana)
    spends = [partial(world.do, web, _ledger.reserve_credits, 1, f"run_{i}") for i in range(5)]
    disabling = partial(world.do, OPERATOR, users.set_active, ana, False)
    outcomes = at_once([*spends, disabling])
    reserved = [o for o in outcomes if isinstance(o, str)]
    late = [o for o in outcomes if isinstance(o, Unauthenticated)]
    assert len(reserved) + len(late) == 5, outcomes
    assert world.do(OPERATOR, _ledger.balance_of, ana) == 100 - len(reserved)
