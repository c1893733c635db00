"""Signing out: of a session that already ended (a plain sign-out, not a forgery warning), and
the note it leaves in a cookie (Secure over https)."""

from __future__ import annotations

from bs4 import BeautifulSoup
from fastapi.testclient import TestClient

from benchgen.app import create_app
from benchgen.services.runtime import Runtime
from benchgen.web.session import SESSION_COOKIE
from tests.support import World
from tests.web.support import PASSWORD, WebUser, csrf_of


def _signed_out(response_location: str | None, client: TestClient) -> None:
    assert response_location == "/signin"
    assert "You are signed out." in client.get("/signin").text


def test_sign_out_in_a_second_tab_after_the_first_signed_out(signed_in: WebUser) -> None:
    # Both tabs' forms hold the same token; the first one's sign-out ended the session.
    assert signed_in.post("/signout").status_code == 303
    response = signed_in.post("/signout")
    assert response.status_code == 303, response.text[:300]
    _signed_out(response.headers.get("location"), signed_in.client)


def test_sign_out_after_the_session_cookie_is_gone(signed_in: WebUser) -> None:
    signed_in.client.cookies.delete(SESSION_COOKIE)
    response = signed_in.post("/signout")
    assert response.status_code == 303
    _signed_out(response.headers.get("location"), signed_in.client)


def test_a_live_session_still_needs_the_token_to_sign_out(signed_in: WebUser) -> None:
    response = signed_in.client.post("/signout", data={"csrf_token": "forged"})
    assert response.status_code == 403
    assert signed_in.get("/").status_code == 200


def test_every_cookie_is_secure_over_https(runtime: Runtime, world: World) -> None:
    world.user("ana@example.com")
    app = create_app(runtime.settings, runtime)
    with TestClient(app, base_url="https://testserver", follow_redirects=False) as client:
        person = WebUser.sign_in(client, "ana@example.com")
        # A signed-out note in a cookie: "You are signed out." (or a title, an address).
        response = person.post("/signout")
    cookies = response.headers.get_list("set-cookie")
    flash = [cookie for cookie in cookies if cookie.startswith("bg_flash=")]
    assert flash and all("secure" in cookie.lower() for cookie in flash), cookies


def test_an_overlong_next_address_does_not_stop_sign_in(
    app_client: TestClient, world: World
) -> None:
    """A crafted link to the sign-in page with a huge `next` made the form refuse every
    sign-in ("Next: must be at most 2000 characters"): the address is dropped instead."""
    world.user("ana@example.com")
    page = app_client.get("/signin", params={"next": "/benchmarks?q=" + "a" * 2100})
    kept = BeautifulSoup(page.text, "html.parser").find("input", attrs={"name": "next"})
    assert kept is not None and kept["value"] == "/"
    response = app_client.post(
        "/signin",
        data={
            "email": "ana@example.com",
            "password": PASSWORD,
            "next": "/benchmarks?q=" + "a" * 2100,  # a form sent with it all the same
            "csrf_token": csrf_of(page.text),
        },
    )
    assert response.status_code == 303
    assert response.headers["location"] == "/"
