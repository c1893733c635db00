"""What one client's address budget covers: an IPv6 client spends one budget for its whole /64,
so rotating through its addresses guesses no further."""

from __future__ import annotations

import pytest

from benchgen.core.context import Principal
from benchgen.core.errors import RateLimited
from benchgen.services import deployment
from benchgen.services.accounts import attempts, sessions, signup
from tests.support import OPERATOR, World

ANON = Principal.system("signin", frozenset())


def test_an_ipv6_client_has_one_budget_for_its_whole_slash_64(world: World) -> None:
    world.do(OPERATOR, deployment.set_setting, "signup_mode", "open")
    budget = world.rt.settings.signin_failures_per_address
    for n in range(budget):  # a new address of one /64 and a new account for every guess
        address = f"2001:db8:1:2::{n + 1:x}"
        assert (
            world.do(ANON, sessions.sign_in, f"guess{n}@example.com", "nope-nope", address) is None
        )
    with pytest.raises(RateLimited, match="for this address"):
        world.do(ANON, sessions.sign_in, "next@example.com", "nope-nope", "2001:db8:1:2:ffff::9")
    with pytest.raises(RateLimited, match="for this address"):
        world.do(ANON, signup.sign_up, "new@example.com", "password123", "", "", "2001:db8:1:2::77")
    # The neighbouring /64 is another client, with its own budget.
    assert world.do(ANON, sessions.sign_in, "x@example.com", "nope-nope", "2001:db8:1:3::1") is None


@pytest.mark.parametrize(
    ("address", "client"),
    [
        ("2001:db8:1:2:aaaa:bbbb:cccc:dddd", "2001:db8:1:2::/64"),
        ("fe80::1%eth0", "fe80::/64"),
        ("::ffff:192.0.2.1", "192.0.2.1"),
        ("192.0.2.1", "192.0.2.1"),
        ("testclient", "testclient"),
        ("x" * 80, "x" * 64),
    ],
)
def test_the_client_an_address_counts_as(address: str, client: str) -> None:
    assert attempts.client_of(address) == client
