"""A stranger's reset requests must not keep the owner's reset from getting through: each request
retired the links already in the owner's mailbox, and three of them locked the address out."""

from __future__ import annotations

import pytest

from benchgen.core.clock import ManualClock
from benchgen.core.errors import RateLimited
from benchgen.services.accounts import passwords
from tests.services.test_account_links import ANON, mails_to, token_in
from tests.support import World

OWNER = "ana@example.com"
STRANGERS = [f"198.51.100.{n}" for n in range(10)]


def resets_to(world: World, email: str) -> list[str]:
    """The reset links mailed to `email`, oldest first."""
    return [token_in(body, "/password/reset/") for body in mails_to(world, email)]


def test_a_strangers_requests_leave_the_owners_link_working(
    world: World, clock: ManualClock
) -> None:
    """Each request retired the older links: a stranger asking once killed the owner's."""
    world.user(OWNER)
    world.do(ANON, passwords.request_password_reset, OWNER, "203.0.113.7")
    [owners] = resets_to(world, OWNER)
    for stranger in STRANGERS:
        clock.advance(seconds=30)
        world.do(ANON, passwords.request_password_reset, OWNER, stranger)
    assert world.do(ANON, passwords.reset_is_live, owners)
    world.do(ANON, passwords.reset_password, owners, "brand-new-pass")


def test_a_stranger_cannot_lock_the_owner_out_of_asking(world: World, clock: ManualClock) -> None:
    """Three requests from anyone refused the owner's own request for the whole window."""
    world.user(OWNER)
    for stranger in STRANGERS:
        world.do(ANON, passwords.request_password_reset, OWNER, stranger)
    world.do(ANON, passwords.request_password_reset, OWNER, "203.0.113.7")
    # The mailbox holds working links all along; none more than the cap at once.
    links = resets_to(world, OWNER)
    assert len(links) == passwords.LIVE_RESETS
    assert all(world.do(ANON, passwords.reset_is_live, link) for link in links)
    clock.advance(minutes=31)
    world.do(ANON, passwords.request_password_reset, OWNER, "203.0.113.7")
    newest = resets_to(world, OWNER)[-1]
    assert newest not in links and world.do(ANON, passwords.reset_is_live, newest)


def test_the_answer_is_the_same_for_an_address_with_no_account(world: World) -> None:
    """Neither a known nor an unknown address is refused for its own count; only the asker's
    client address runs out, alike for both."""
    world.user(OWNER)
    for email in (OWNER, "nobody@example.com"):
        for stranger in STRANGERS:
            assert world.do(ANON, passwords.request_password_reset, email, stranger) is None
    assert mails_to(world, "nobody@example.com") == []


def test_using_one_link_ends_the_others(world: World, clock: ManualClock) -> None:
    """Several live links must not outlive the reset one of them made."""
    world.user(OWNER)
    for stranger in STRANGERS[:3]:
        clock.advance(seconds=1)
        world.do(ANON, passwords.request_password_reset, OWNER, stranger)
    first, *others = resets_to(world, OWNER)
    world.do(ANON, passwords.reset_password, first, "brand-new-pass")
    assert not any(world.do(ANON, passwords.reset_is_live, link) for link in others)


def test_one_client_address_is_still_throttled(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The asker's own budget still stops a flood from one place."""
    monkeypatch.setattr(world.rt.settings, "signin_failures_per_address", 4)
    for n in range(4):
        world.do(ANON, passwords.request_password_reset, f"x{n}@example.com", "192.0.2.1")
    with pytest.raises(RateLimited):
        world.do(ANON, passwords.request_password_reset, "y@example.com", "192.0.2.1")
