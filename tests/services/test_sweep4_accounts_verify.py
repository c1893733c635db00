"""Verification links confirm an address only for the account they were mailed for, signed in:
the link proves the mailbox, not that its owner made the account."""

from __future__ import annotations

import pytest

from benchgen.core.context import Principal
from benchgen.core.errors import NotFound, PermissionDenied
from benchgen.services.accounts import links
from tests.services.test_account_links import (
    ANON,
    mails_to,
    set_mode,
    sign_up,
    token_in,
    verified_at,
)
from tests.support import World


def test_a_verification_link_confirms_only_its_own_signed_in_account(world: World) -> None:
    """Anyone holding the link confirmed it: a stranger signed up with ceo@partner.org, its
    owner clicked "Confirm my email" in the mail they did not expect, and the stranger's
    account then counted as the CEO's in every @partner.org whitelist."""
    set_mode(world, "open")
    squatter = sign_up(world, "ceo@partner.org")
    ana = world.user("ana@example.com")
    [letter] = mails_to(world, "ceo@partner.org")
    assert "signed in to that account" in letter and "/password/forgot" in letter
    secret = token_in(letter, "/account/verify/")
    token = world.api(world.token(squatter, ["read"]))
    for stranger in (ANON, Principal.web(ana), token):
        with pytest.raises(PermissionDenied, match="Sign in to the account this link"):
            world.do(stranger, links.verify_email, secret)
        assert not world.do(stranger, links.verification_is_mine, secret)
    assert verified_at(world, squatter) is None
    assert world.do(ANON, links.verification_is_live, secret)  # refused, not used up
    me = Principal.web(squatter)
    assert world.do(me, links.verification_is_mine, secret)
    assert world.do(me, links.verify_email, secret).email_verified_at is not None
    with pytest.raises(NotFound):
        world.do(me, links.verify_email, secret)  # once only
