"""Too-long fields on the account forms showed the generic 422 page (a `Form(max_length=…)` in the
page function refused them first) and lost the form; the services' own messages now show beside
the field, with what was typed kept (never a password)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from bs4 import BeautifulSoup
from fastapi.testclient import TestClient

from benchgen.services.runtime import Runtime
from tests.services.test_account_links import mails_to, token_in
from tests.support import World
from tests.web.support import WebUser
from tests.web.test_accounts import browser, set_mode, signup_form, submit

LONG_EMAIL = "a" * 330 + "@example.com"
LONG_PASSWORD = "p" * 1100


@pytest.fixture
def admin(runtime: Runtime, world: World) -> Iterator[WebUser]:
    """Root, an admin, signed in."""
    world.user("root@example.com", admin=True)
    with browser(runtime) as client:
        yield WebUser.sign_in(client, "root@example.com")


def test_a_long_email_on_the_forgot_form_is_said_beside_it(app_client: TestClient) -> None:
    response = submit(app_client, "/password/forgot", {"email": LONG_EMAIL})
    assert response.status_code == 422
    page = BeautifulSoup(response.text, "html.parser")
    assert "at most 320 characters" in page.find(id="email-error").get_text()
    assert page.find("input", id="email")["value"] == LONG_EMAIL


def test_a_long_password_on_the_reset_form_is_said_beside_it(
    app_client: TestClient, world: World
) -> None:
    world.user("ana@example.com")
    submit(app_client, "/password/forgot", {"email": "ana@example.com"})
    secret = token_in(mails_to(world, "ana@example.com")[0], "/password/reset/")
    path = f"/password/reset/{secret}"
    response = submit(
        app_client, path, {"password": LONG_PASSWORD, "password_again": LONG_PASSWORD}
    )
    assert response.status_code == 422
    page = BeautifulSoup(response.text, "html.parser")
    assert "8 to 1024 characters" in page.find(id="password-error").get_text()
    assert LONG_PASSWORD not in response.text
    assert app_client.get(path).status_code == 200  # the link still works


def test_a_long_invite_on_the_sign_up_form_says_the_link_is_dead(
    app_client: TestClient, world: World
) -> None:
    set_mode(world, "open")
    data = signup_form("bob@example.com", display_name="Bob", invite="x" * 300)
    response = submit(app_client, "/signup", data)
    assert response.status_code == 403
    assert "This link is not valid" in BeautifulSoup(response.text, "html.parser").get_text()


def test_a_long_password_on_the_admins_new_account_form_is_said_there(
    admin: WebUser,
) -> None:
    data = {"email": "bob@example.com", "password": LONG_PASSWORD, "display_name": "Bob"}
    response = admin.post("/admin/users", data)
    assert response.status_code == 422
    page = BeautifulSoup(response.text, "html.parser")
    assert "8 to 1024 characters" in page.find(id="create-error").get_text()
    assert page.find("input", id="new-email")["value"] == "bob@example.com"
    assert LONG_PASSWORD not in response.text


def test_a_long_credit_note_is_said_beside_it(admin: WebUser, world: World) -> None:
    ana = world.user("ana@example.com")
    response = admin.post(f"/admin/users/{ana}/credits", {"amount": "5", "note": "n" * 600})
    assert response.status_code == 422
    page = BeautifulSoup(response.text, "html.parser")
    assert "at most 500 characters" in page.find(id=f"note-{ana}-error").get_text()
    assert page.find("input", id=f"note-{ana}")["value"] == "n" * 600
