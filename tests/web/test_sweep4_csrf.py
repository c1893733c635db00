"""The CSRF check against tokens no page of ours ever sent."""

from __future__ import annotations

from fastapi.testclient import TestClient

from benchgen.web.session import CSRF_HEADER, PRESESSION_COOKIE
from tests.web.support import WebUser

REFUSED = "sent from another site"


def test_a_token_with_non_ascii_characters_is_refused_not_a_server_error(
    app_client: TestClient, signed_in: WebUser
) -> None:
    """A CSRF token with a character outside ASCII (a hostile client, a mangled form) made
    `secrets.compare_digest` raise TypeError: every form, the sign-in form included, answered
    500 and logged a crash instead of refusing the request."""
    app_client.get("/signin")
    form = {"email": "ana@example.com", "password": "password123", "csrf_token": "jeton-été"}
    anonymous = app_client.post("/signin", data=form)
    assert anonymous.status_code == 403 and REFUSED in anonymous.text

    in_form = signed_in.client.post("/settings/tokens", data={"csrf_token": "été", "name": "x"})
    assert in_form.status_code == 403 and REFUSED in in_form.text
    # Header values reach the app as Latin-1: "é" arrives as two non-ASCII characters.
    in_header = signed_in.client.post(
        "/settings/tokens", data={"name": "x"}, headers={CSRF_HEADER: "été".encode()}
    )
    assert in_header.status_code == 403 and REFUSED in in_header.text
    assert signed_in.get("/settings/tokens").text.count("<td>x</td>") == 0  # nothing was made


def test_a_non_ascii_pre_session_cookie_is_refused_not_a_server_error(
    app_client: TestClient,
) -> None:
    """Before sign-in the form's token is compared with a cookie, which the client writes: one
    outside ASCII crashed the sign-in form the same way."""
    form = {"email": "ana@example.com", "password": "password123", "csrf_token": "jeton"}
    cookie = f"{PRESESSION_COOKIE}=jeton-été".encode()
    response = app_client.post("/signin", data=form, headers={"cookie": cookie})
    assert response.status_code == 403 and REFUSED in response.text


def test_a_form_sent_signed_out_with_a_malformed_referer_leads_to_sign_in(
    app_client: TestClient,
) -> None:
    """A form sent after its session ended leads to sign-in, back to the page named by its
    Referer; a Referer that is no URL at all ('http://[…', an unclosed IPv6 host) made
    `urlsplit` raise ValueError, and the answer was a 500."""
    response = app_client.post(
        "/settings/tokens", data={"name": "x"}, headers={"referer": "http://[oops/settings"}
    )
    assert response.status_code == 303
    assert response.headers["location"] == "/signin?next=/"
