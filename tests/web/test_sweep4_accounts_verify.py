"""The verification page confirms an address only for the account signed in to it, and leads
anyone else to sign in to that account (and back) or to take the address back."""

from __future__ import annotations

from urllib.parse import quote

from bs4 import BeautifulSoup
from fastapi.testclient import TestClient

from tests.services.test_account_links import mails_to, token_in
from tests.support import World
from tests.web.support import PASSWORD, WebUser, csrf_of
from tests.web.test_accounts import browser, set_mode, signup_form, submit


def test_a_verification_link_asks_whoever_is_not_its_account_to_sign_in_to_it(
    app_client: TestClient, world: World
) -> None:
    """The page confirmed the address for anyone holding the link, signed in as someone else
    or not at all: a stranger's account counted as the mailbox owner's once they clicked."""
    set_mode(world, "open")
    assert submit(app_client, "/signup", signup_form("bob@example.com")).status_code == 303
    app_client.post("/signout", data={"csrf_token": csrf_of(app_client.get("/").text)})
    secret = token_in(mails_to(world, "bob@example.com")[0], "/account/verify/")
    path = f"/account/verify/{secret}"
    with browser(world.rt) as stranger:
        page = BeautifulSoup(stranger.get(path).text, "html.parser")
        assert page.find("button", string="Confirm my email") is None
        assert page.find("a", href=f"/signin?next={quote(path, safe='')}") is not None
        assert page.find("a", href="/password/forgot") is not None
        refused = submit(stranger, path, {})
        assert refused.status_code == 403 and "Sign in to the account" in refused.text
    world.user("ana@example.com")
    with browser(world.rt) as other:
        WebUser.sign_in(other, "ana@example.com")
        assert "signed in as ana@example.com" in other.get(path).text
        assert submit(other, path, {}).status_code == 403
    signin = submit(
        app_client,
        f"/signin?next={quote(path, safe='')}",
        {"email": "bob@example.com", "password": PASSWORD, "next": path},
    )
    assert signin.headers["location"] == path  # back to the link, to confirm
    done = submit(app_client, path, {})
    assert done.status_code == 303 and done.headers["location"] == "/settings/account"
    assert "not verified" not in app_client.get("/settings/account").text
