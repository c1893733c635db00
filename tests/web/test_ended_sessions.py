"""A form sent after its session ended: the person is sent to sign in, then back to the form."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

from fastapi.testclient import TestClient

from benchgen.web.session import SESSION_COOKIE
from tests.web.support import WebUser


def _sign_in_leads_to(location: str) -> str:
    target = urlsplit(location)
    assert target.path == "/signin"
    (next_path,) = parse_qs(target.query)["next"]
    return next_path


def test_a_form_sent_after_the_session_ended_leads_to_sign_in_and_back(
    signed_in: WebUser,
) -> None:
    signed_in.post("/signout")
    response = signed_in.post(
        "/settings/tokens",
        {"name": "typed before the session ended"},
        headers={"referer": "http://testserver/settings/tokens?from=form"},
    )
    assert response.status_code == 303
    assert _sign_in_leads_to(response.headers["location"]) == "/settings/tokens?from=form"
    signin = signed_in.get(response.headers["location"])
    assert "Your session ended, so that form was not sent" in signin.text


def test_a_referer_from_elsewhere_is_not_where_sign_in_leads(signed_in: WebUser) -> None:
    signed_in.client.cookies.delete(SESSION_COOKIE)
    response = signed_in.post(
        "/settings/tokens",
        {"name": "x"},
        headers={"referer": "https://elsewhere.example/settings/tokens"},
    )
    assert response.status_code == 303
    assert _sign_in_leads_to(response.headers["location"]) == "/"


def test_a_form_without_the_token_from_a_live_session_is_still_refused(
    signed_in: WebUser,
) -> None:
    response = signed_in.client.post("/settings/tokens", data={"name": "forged"})
    assert response.status_code == 403
    assert "This form has expired" in response.text


def test_an_htmx_request_after_the_session_ended_is_refused_not_redirected(
    signed_in: WebUser,
) -> None:
    signed_in.post("/signout")
    response = signed_in.post("/settings/tokens", {"name": "x"}, headers={"hx-request": "true"})
    assert response.status_code == 403


def test_the_sign_in_form_keeps_its_own_refusal(app_client: TestClient) -> None:
    response = app_client.post("/signin", data={"email": "a@example.com", "password": "x"})
    assert response.status_code == 403
    assert "This form has expired" in response.text
