"""Pages whose address is a secret (a password reset, an email verification) name it to no
other request: no Referer with the token to the stylesheet, the scripts or the next page."""

from __future__ import annotations

from fastapi.testclient import TestClient

from benchgen.services import deployment
from tests.services.test_account_links import mails_to, token_in
from tests.support import OPERATOR, World
from tests.web.support import csrf_of


def _send(client: TestClient, path: str, data: dict[str, str]) -> None:
    token = csrf_of(client.get(path).text)
    assert client.post(path, data={"csrf_token": token, **data}).status_code in (200, 303)


def test_a_reset_page_sends_no_referrer(app_client: TestClient, world: World) -> None:
    world.user("ana@example.com")
    _send(app_client, "/password/forgot", {"email": "ana@example.com"})
    secret = token_in(mails_to(world, "ana@example.com")[0], "/password/reset/")
    path = f"/password/reset/{secret}"
    page = app_client.get(path)
    assert page.status_code == 200
    assert page.headers["referrer-policy"] == "no-referrer"
    token = csrf_of(page.text)
    again = app_client.post(
        path, data={"csrf_token": token, "password": "short", "password_again": "short"}
    )
    assert again.status_code == 422 and again.headers["referrer-policy"] == "no-referrer"


def test_a_verification_page_sends_no_referrer(app_client: TestClient, world: World) -> None:
    world.do(OPERATOR, deployment.set_setting, "signup_mode", "open")
    form = {"email": "bob@example.com", "password": "password123", "password_again": "password123"}
    _send(app_client, "/signup", form)
    secret = token_in(mails_to(world, "bob@example.com")[0], "/account/verify/")
    page = app_client.get(f"/account/verify/{secret}")
    assert page.status_code == 200
    assert page.headers["referrer-policy"] == "no-referrer"


def test_other_pages_keep_the_sites_policy(app_client: TestClient) -> None:
    assert app_client.get("/signin").headers["referrer-policy"] == "same-origin"
