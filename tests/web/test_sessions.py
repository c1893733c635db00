"""Signing in and out: cookies, rotation, expiry, throttling, CSRF, and the API ignoring cookies."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from fastapi import Request
from fastapi.responses import Response
from fastapi.testclient import TestClient
from sqlalchemy import select

from benchgen.core.clock import ManualClock
from benchgen.db.tables import AuditEvent
from benchgen.services import audit
from benchgen.services.runtime import Runtime
from benchgen.web.session import WebContext
from benchgen.web.templating import render
from tests.support import World
from tests.web.support import PASSWORD, WebUser, csrf_of

# Expiry and throttling compare times in SQL, and sign-out races a turn: both backends.
pytestmark = pytest.mark.both_backends


def test_pages_need_a_session(app_client: TestClient) -> None:
    response = app_client.get("/benchmarks?q=x")
    assert response.status_code == 303
    assert response.headers["location"] == "/signin?next=/benchmarks%3Fq%3Dx"


def test_sign_in_sets_a_safe_cookie_and_lands_on_the_dashboard(
    app_client: TestClient, world: World
) -> None:
    world.user("ana@example.com")
    form = app_client.get("/signin")
    response = app_client.post(
        "/signin",
        data={"email": "ANA@example.com", "password": PASSWORD, "csrf_token": csrf_of(form.text)},
    )
    assert response.status_code == 303 and response.headers["location"] == "/"
    cookie = next(c for c in response.headers.get_list("set-cookie") if "bg_session=" in c)
    assert "HttpOnly" in cookie and "SameSite=lax" in cookie and "Path=/" in cookie
    assert "Welcome" in app_client.get("/").text


def test_wrong_password_is_one_message_and_no_cookie(app_client: TestClient, world: World) -> None:
    world.user("ana@example.com")
    token = csrf_of(app_client.get("/signin").text)
    for email in ("ana@example.com", "nobody@example.com"):
        response = app_client.post(
            "/signin", data={"email": email, "password": "wrong-pass", "csrf_token": token}
        )
        assert response.status_code == 401
        assert "Wrong email or password." in response.text
        assert "bg_session" not in response.headers.get("set-cookie", "")


@pytest.mark.both_backends  # PostgreSQL text cannot hold NUL: each of these was a 500 there
def test_a_nul_character_in_a_page_request_is_refused_as_input(
    app_client: TestClient, world: World, signed_in: WebUser
) -> None:
    token = csrf_of(app_client.get("/signin").text)
    data = {"email": "a\x00b@example.com", "password": "whatever1", "csrf_token": token}
    refused = app_client.post("/signin", data=data)
    assert refused.status_code == 422 and "NUL" in refused.text
    for path in ("/benchmarks?q=a%00", "/benchmarks/bm%00", "/admin/users?q=%00", "/runs/r%00"):
        answer = signed_in.get(path)
        assert answer.status_code == 422, (path, answer.status_code)
        assert "text/html" in answer.headers["content-type"]


def test_sign_in_without_the_csrf_token_is_refused(app_client: TestClient, world: World) -> None:
    world.user("ana@example.com")
    app_client.get("/signin")
    response = app_client.post("/signin", data={"email": "ana@example.com", "password": PASSWORD})
    assert response.status_code == 403
    assert "text/html" in response.headers["content-type"]


def test_next_accepts_only_local_paths(app_client: TestClient, world: World) -> None:
    world.user("ana@example.com")
    token = csrf_of(app_client.get("/signin").text)
    for hostile in ("https://evil.example/", "//evil.example", "/\\evil.example", "javascript:x"):
        response = app_client.post(
            "/signin",
            data={
                "email": "ana@example.com",
                "password": PASSWORD,
                "csrf_token": token,
                "next": hostile,
            },
        )
        assert response.headers["location"] == "/", hostile
        app_client.cookies.delete("bg_session")  # signed in, the form would be stale
    response = app_client.post(
        "/signin",
        data={
            "email": "ana@example.com",
            "password": PASSWORD,
            "csrf_token": token,
            "next": "/benchmarks?q=a",
        },
    )
    assert response.headers["location"] == "/benchmarks?q=a"


def test_sign_in_rotates_the_session(signed_in: WebUser) -> None:
    old = signed_in.client.cookies["bg_session"]
    again = signed_in.post("/signin", {"email": "ana@example.com", "password": PASSWORD})
    assert again.status_code == 303
    assert signed_in.client.cookies["bg_session"] != old
    signed_in.client.cookies.clear()
    signed_in.client.cookies.set("bg_session", old)
    assert signed_in.get("/").status_code == 303  # the old session ended


def test_sign_out_revokes_the_session_on_the_server(signed_in: WebUser) -> None:
    secret = signed_in.client.cookies["bg_session"]
    response = signed_in.post("/signout")
    assert response.status_code == 303
    signed_in.client.cookies.clear()
    signed_in.client.cookies.set("bg_session", secret)  # a copied cookie is worthless now
    assert signed_in.get("/").status_code == 303


def test_pages_are_never_kept_by_the_browser_but_static_files_are(signed_in: WebUser) -> None:
    """Back after signing out showed answer keys and chats again, from the browser's cache."""
    for path in ("/", "/settings/account", "/benchmarks"):
        assert signed_in.get(path).headers["cache-control"] == "no-store", path
    assert "no-store" not in signed_in.get("/static/app.css").headers.get("cache-control", "")
    assert signed_in.get("/favicon.ico").headers["cache-control"].startswith("public")


def test_sign_out_needs_the_csrf_token(signed_in: WebUser) -> None:
    response = signed_in.client.post("/signout")
    assert response.status_code == 403
    assert signed_in.get("/").status_code == 200


def test_an_idle_session_ends(runtime: Runtime, signed_in: WebUser) -> None:
    clock = runtime.clock
    assert isinstance(clock, ManualClock)
    idle = runtime.settings.session_idle_minutes
    clock.advance(minutes=idle - 1)
    assert signed_in.get("/").status_code == 200  # used: the idle clock restarts
    clock.advance(minutes=idle - 1)
    assert signed_in.get("/").status_code == 200
    clock.advance(minutes=idle + 1)
    assert signed_in.get("/").status_code == 303


def test_a_used_session_still_ends_at_its_absolute_expiry(
    runtime: Runtime, signed_in: WebUser
) -> None:
    clock = runtime.clock
    assert isinstance(clock, ManualClock)
    started = clock.now()
    step = runtime.settings.session_idle_minutes // 2
    while signed_in.get("/").status_code == 200:
        clock.advance(minutes=step)
    lived = clock.now() - started
    limit = timedelta(hours=runtime.settings.session_max_hours)
    assert limit <= lived < limit + timedelta(minutes=step)


def test_failed_sign_ins_are_throttled_per_account(app_client: TestClient, world: World) -> None:
    world.user("ana@example.com")
    token = csrf_of(app_client.get("/signin").text)
    limit = app_client.app.state.runtime.settings.signin_failures_per_account  # type: ignore[attr-defined]
    for _ in range(limit):
        app_client.post(
            "/signin",
            data={"email": "ana@example.com", "password": "nope-nope", "csrf_token": token},
        )
    right = app_client.post(
        "/signin", data={"email": "ana@example.com", "password": PASSWORD, "csrf_token": token}
    )
    assert right.status_code == 429  # even the right password waits: guessing is paused
    assert "bg_session" not in right.headers.get("set-cookie", "")
    # The person learns until when (the window is 15 minutes from the first failure).
    assert "try again after 2026-01-01 00:15:00 UTC" in right.text


def test_the_api_ignores_session_cookies(signed_in: WebUser) -> None:
    response = signed_in.get("/api/v1/me")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "unauthenticated"


def test_pages_send_a_strict_content_security_policy(signed_in: WebUser) -> None:
    response = signed_in.get("/")
    csp = response.headers["content-security-policy"]
    assert "frame-ancestors 'none'" in csp and "script-src 'self'" in csp
    assert "unsafe-inline" not in csp and "unsafe-eval" not in csp
    assert response.headers["x-frame-options"] == "DENY"


def test_unknown_pages_get_an_html_404(signed_in: WebUser) -> None:
    response = signed_in.get("/no/such/page")
    assert response.status_code == 404
    assert "text/html" in response.headers["content-type"]
    assert signed_in.get("/api/v1/nope").json()["error"]["code"] == "not_found"


def test_a_disabled_account_is_signed_out_at_once(world: World, signed_in: WebUser) -> None:
    from benchgen.services.accounts import users
    from tests.support import OPERATOR

    user = world.do(OPERATOR, users.get_user_by_email, "ana@example.com")
    world.do(OPERATOR, users.set_active, user.id, False)
    assert signed_in.get("/").status_code == 303


def test_failed_sign_ins_are_throttled_per_address(
    runtime: Runtime, app_client: TestClient, world: World
) -> None:
    world.user("ana@example.com")
    token = csrf_of(app_client.get("/signin").text)
    for n in range(runtime.settings.signin_failures_per_address):
        # A different account each time: only the address ties the guesses together.
        app_client.post(
            "/signin",
            data={"email": f"guess{n}@example.com", "password": "nope-nope", "csrf_token": token},
        )
    right = app_client.post(
        "/signin", data={"email": "ana@example.com", "password": PASSWORD, "csrf_token": token}
    )
    assert right.status_code == 429
    assert isinstance(runtime.clock, ManualClock)
    runtime.clock.advance(minutes=runtime.settings.signin_window_minutes + 1)
    again = app_client.post(
        "/signin", data={"email": "ana@example.com", "password": PASSWORD, "csrf_token": token}
    )
    assert again.status_code == 303


def test_a_page_that_answers_an_error_commits_nothing(runtime: Runtime, signed_in: WebUser) -> None:
    app: Any = signed_in.client.app

    @app.post("/test-refusal")
    def refusal(request: Request, ctx: WebContext) -> Response:
        audit.record(ctx, audit.AuditAction.REPLY_REPORT, "test", "written-then-refused")
        return render(
            request, "error.html", 422, title="t", message="m", problems=[], page="", back=None
        )

    assert signed_in.post("/test-refusal").status_code == 422
    with runtime.database.session() as session:
        written = select(AuditEvent).where(AuditEvent.object_id == "written-then-refused")
        assert session.scalar(written) is None
