"""Pages whose address holds a secret name it to no request they lead to."""

from __future__ import annotations

from urllib.parse import quote

from fastapi.testclient import TestClient

from benchgen.services import deployment
from benchgen.services.accounts import signup
from tests.services.test_account_links import mails_to, token_in
from tests.support import OPERATOR, World


def test_the_sign_up_page_of_an_invite_sends_no_referrer(
    app_client: TestClient, world: World
) -> None:
    """The reset, verification and collaborator-invitation pages kept their secret out of the
    Referer of every stylesheet, script and link they lead to, but the sign-up page opened by
    an admin's invite sent its address (the invite that makes an account with a verified
    email) with each of them, into the server's and any proxy's logs."""
    world.do(OPERATOR, deployment.set_setting, "signup_mode", "invite")
    world.do(OPERATOR, signup.create_invite, "bob@example.com")
    secret = token_in(mails_to(world, "bob@example.com")[0], "/signup?invite=")
    page = app_client.get(f"/signup?invite={secret}")
    assert page.status_code == 200 and "bob@example.com" in page.text
    assert page.headers["referrer-policy"] == "no-referrer"


def test_the_sign_in_page_on_the_way_to_an_invitation_sends_no_referrer(
    app_client: TestClient,
) -> None:
    """A signed-out person following a collaborator invitation is sent to sign in first, with
    the invitation's address (its secret) in `next`: the sign-in page then named it in the
    Referer of its stylesheet, its script and the form it posts."""
    page = app_client.get(f"/signin?next={quote('/invitations/secret-of-the-link', safe='')}")
    assert page.status_code == 200 and "/invitations/secret-of-the-link" in page.text
    assert page.headers["referrer-policy"] == "no-referrer"
