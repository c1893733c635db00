"""Taking back an address someone else signed up with: the mailbox's owner resets the password
of the unverified account, which verifies the address and locks out whoever made it."""

from __future__ import annotations

import pytest

from benchgen.core.context import Principal
from benchgen.core.errors import NotFound, Unauthenticated
from benchgen.services.accounts import links, passwords, signup, users
from benchgen.services.runs import notifications
from tests.services.test_account_links import (
    ANON,
    actions,
    live_sessions,
    mails_to,
    open_session,
    set_mode,
    sign_up,
    token_in,
    turn_credential,
    turn_is_live,
    verified_at,
)
from tests.support import OPERATOR, World

OWNER = "bob@example.com"


def resets_to(world: World, email: str) -> list[str]:
    """The reset mails to `email` (mail queued in one tick has no set order)."""
    return [body for body in mails_to(world, email) if "/password/reset/" in body]


def token_is_live(world: World, secret: str) -> bool:
    try:
        world.api(secret)
    except Unauthenticated:
        return False
    return True


def test_the_mailbox_owner_takes_back_an_address_a_stranger_signed_up_with(
    world: World,
) -> None:
    """A reset refused unverified addresses: whoever signed up first with someone's address
    kept it for good, and its owner could neither sign up nor reset without an admin. Taken
    back, it must keep no way in for them (sessions, turns, tokens) nor out (a webhook)."""
    set_mode(world, "open")
    squatter = sign_up(world, OWNER)
    session = open_session(world, squatter)
    turn = turn_credential(world, squatter)
    token = world.token(squatter, ["read"])
    world.rt.settings = world.rt.settings.model_copy(update={"model_host_allowlist": "127.0.0.1"})
    hook = "http://127.0.0.1:9/results"
    world.do(Principal.web(squatter), notifications.update_notification_settings, False, hook)
    [mailed] = mails_to(world, OWNER)
    verify = token_in(mailed, "/account/verify/")
    assert world.do(ANON, signup.sign_up, OWNER, "owners-password") is None  # taken

    assert world.do(ANON, passwords.request_password_reset, OWNER, "198.51.100.9") is None
    [letter] = resets_to(world, OWNER)
    assert "never confirmed" in letter and "takes it over" in letter
    secret = token_in(letter, "/password/reset/")
    assert world.do(ANON, passwords.reset_claims_address, secret)
    assert world.do(ANON, passwords.reset_password, secret, "owners-password").id == squatter

    assert verified_at(world, squatter) is not None
    assert session not in live_sessions(world, squatter)
    assert not turn_is_live(world, turn)
    assert not token_is_live(world, token)
    mine = world.do(Principal.web(squatter), notifications.get_notification_settings)
    assert mine.webhook_url is None  # the owner's run results would have gone to the squatter
    with pytest.raises(Unauthenticated):
        world.do(OPERATOR, users.authenticate, OWNER, "password123")
    world.do(OPERATOR, users.authenticate, OWNER, "owners-password")
    with pytest.raises(NotFound):  # the squatter's pending link is dead with the rest
        world.do(ANON, links.verify_email, verify)
    done = actions(world, squatter)
    assert ("email.verify", squatter, "web") in done and ("password.reset", squatter, "web") in done


def test_a_verified_accounts_reset_keeps_its_api_tokens_and_says_nothing_of_takeovers(
    world: World,
) -> None:
    """Only a takeover revokes tokens: scripts and CI of the address's owner keep working."""
    ana = world.user("ana@example.com")
    token = world.token(ana, ["read"])
    world.do(ANON, passwords.request_password_reset, "ana@example.com", "198.51.100.9")
    [letter] = mails_to(world, "ana@example.com")
    assert "never confirmed" not in letter
    secret = token_in(letter, "/password/reset/")
    assert not world.do(ANON, passwords.reset_claims_address, secret)
    world.do(ANON, passwords.reset_password, secret, "brand-new-pass")
    assert token_is_live(world, token)


def test_reset_mail_to_an_unverified_address_keeps_the_per_address_throttle(
    world: World,
) -> None:
    """The new mail to unverified addresses must not become a way to flood a mailbox."""
    set_mode(world, "open")
    sign_up(world, OWNER)
    for n in range(passwords.LIVE_RESETS + 2):
        world.do(ANON, passwords.request_password_reset, OWNER, f"198.51.100.{n}")
    assert len(resets_to(world, OWNER)) == passwords.LIVE_RESETS


def test_a_disabled_unverified_account_is_not_taken_over(world: World) -> None:
    """An admin's decision stands: a disabled account gets no reset link, verified or not."""
    set_mode(world, "open")
    squatter = sign_up(world, OWNER)
    world.do(OPERATOR, users.set_active, squatter, False)
    world.do(ANON, passwords.request_password_reset, OWNER, "198.51.100.9")
    assert resets_to(world, OWNER) == []
    assert verified_at(world, squatter) is None
