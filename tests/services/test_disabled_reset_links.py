"""Disabling an account retires its unused password-reset links with its tokens and sessions."""

from __future__ import annotations

from benchgen.core.clock import ManualClock
from benchgen.core.context import Principal
from benchgen.services.accounts import passwords, users
from tests.services.test_account_links import ADDRESS, ANON, mails_to, token_in
from tests.support import World


def test_a_reset_link_mailed_before_disabling_is_dead_once_enabled_again(
    world: World, clock: ManualClock
) -> None:
    """It stayed usable: enabled again within its 30 minutes, the account could be taken
    through a link that may have leaked with it, as its revoked tokens could not."""
    ana = world.user("ana@example.com")
    root = Principal.web(world.user("root@example.com", admin=True))
    world.do(ANON, passwords.request_password_reset, "ana@example.com", ADDRESS)
    secret = token_in(mails_to(world, "ana@example.com")[-1], "/password/reset/")
    world.do(root, users.set_active, ana, False)
    world.do(root, users.set_active, ana, True)
    assert not world.do(ANON, passwords.reset_is_live, secret)
    clock.advance(seconds=1)  # mails are listed by time
    world.do(ANON, passwords.request_password_reset, "ana@example.com", ADDRESS)
    fresh = token_in(mails_to(world, "ana@example.com")[-1], "/password/reset/")
    assert world.do(ANON, passwords.reset_password, fresh, "brand-new-pass").id == ana
