"""A new invite's link: the form's POST redirects, so a reload never re-sends it, and the page it
leads to shows the link once, to its maker, never in an address."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from bs4 import BeautifulSoup

from benchgen.services.accounts import signup
from benchgen.services.runtime import Runtime
from tests.services.test_account_links import mails_to, token_in
from tests.support import OPERATOR, World
from tests.web.support import WebUser
from tests.web.test_accounts import browser, set_mode


@pytest.fixture
def root(runtime: Runtime, world: World) -> Iterator[WebUser]:
    """An admin, signed in, with sign-up by invite."""
    world.user("root@example.com", admin=True)
    set_mode(world, "invite")
    with browser(runtime) as client:
        yield WebUser.sign_in(client, "root@example.com")


def test_sending_an_invite_redirects_and_its_link_shows_once(root: WebUser, world: World) -> None:
    sent = root.post("/admin/invites", {"email": "bob@example.com"})
    assert sent.status_code == 303 and sent.headers["location"] == "/admin/invites"
    secret = token_in(mails_to(world, "bob@example.com")[0], "/signup?invite=")
    assert secret not in sent.headers["location"]
    once = root.get("/admin/invites")
    assert once.status_code == 200 and once.headers["cache-control"] == "no-store"
    page = BeautifulSoup(once.text, "html.parser")
    assert page.find(id="invite-link").get_text() == f"/signup?invite={secret}"
    assert "Invite sent to bob@example.com." in page.get_text()
    # The reload is a GET: no second invite, no 409, and the link is gone.
    again = root.get("/admin/invites")
    assert again.status_code == 200 and secret not in again.text
    assert len(mails_to(world, "bob@example.com")) == 1


def test_only_an_open_invites_link_is_shown_and_only_to_an_admin(
    root: WebUser, world: World, signed_in: WebUser
) -> None:
    world.do(OPERATOR, signup.create_invite, "eve@example.com")
    secret = token_in(mails_to(world, "eve@example.com")[0], "/signup?invite=")
    for planted, shown in (("not-an-invite", False), (secret, True)):
        root.client.cookies.set("bg_new_invite", planted, path="/admin/invites")
        assert (root.page("/admin/invites").find(id="invite-link") is not None) is shown
    signed_in.client.cookies.set("bg_new_invite", secret, path="/admin/invites")
    refused = signed_in.get("/admin/invites")
    assert refused.status_code == 403 and secret not in refused.text
