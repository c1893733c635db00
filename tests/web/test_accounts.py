"""Account pages: sign-in links, sign-up in each mode, invites, email verification, and the
forgotten-password flow (same answer for every address, single-use links, throttling)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from email.message import EmailMessage

import pytest
from bs4 import BeautifulSoup
from fastapi.testclient import TestClient
from httpx import Response
from sqlalchemy import select

from benchgen.app import create_app
from benchgen.core.clock import ManualClock
from benchgen.core.context import Context
from benchgen.db.tables import OutboxEmail
from benchgen.services import deployment
from benchgen.services.runtime import Runtime
from tests.services.test_account_links import mails_to, token_in
from tests.support import OPERATOR, World
from tests.web.support import PASSWORD, WebUser, csrf_of

HOSTILE = '<script>alert(1)</script>"><img src=x onerror=alert(1)>'


def browser(runtime: Runtime) -> TestClient:
    """Another browser on the same app (no cookies yet, redirects not followed)."""
    return TestClient(create_app(runtime.settings, runtime), follow_redirects=False)


def submit(client: TestClient, path: str, data: dict[str, str], form_page: str = "") -> Response:
    """Load the form's page (for its CSRF token), then post the form as a browser would. A page
    that shows no form (sign-up closed, a dead link) takes the token from the sign-in page."""
    html = client.get(form_page or path).text
    if 'name="csrf_token"' not in html:
        html = client.get("/signin").text
    return client.post(path, data={"csrf_token": csrf_of(html), **data})


def set_mode(world: World, mode: str) -> None:
    world.do(OPERATOR, deployment.set_setting, "signup_mode", mode)


def signup_form(email: str, password: str = PASSWORD, **extra: str) -> dict[str, str]:
    return {"email": email, "password": password, "password_again": password, **extra}


@pytest.fixture
def admin(runtime: Runtime, world: World) -> Iterator[WebUser]:
    """Root, an admin, signed in."""
    world.user("root@example.com", admin=True)
    with browser(runtime) as client:
        yield WebUser.sign_in(client, "root@example.com")


# --- sign-in links --------------------------------------------------------------------------


def test_sign_in_links_to_the_reset_always_and_to_sign_up_only_when_open(
    app_client: TestClient, world: World
) -> None:
    page = BeautifulSoup(app_client.get("/signin").text, "html.parser")
    assert page.find("a", href="/password/forgot") is not None
    assert page.find("a", href="/signup") is None
    set_mode(world, "invite")
    assert 'href="/signup"' not in app_client.get("/signin").text
    set_mode(world, "open")
    assert 'href="/signup"' in app_client.get("/signin").text


# --- sign-up --------------------------------------------------------------------------------


def test_closed_sign_up_says_so_and_refuses_the_form(app_client: TestClient) -> None:
    page = app_client.get("/signup")
    assert page.status_code == 200 and "Sign-up is closed" in page.text
    assert BeautifulSoup(page.text, "html.parser").find("input", id="password") is None
    response = submit(app_client, "/signup", signup_form("bob@example.com"))
    assert response.status_code == 403 and "Sign-up is closed" in response.text
    assert "bg_session" not in response.headers.get("set-cookie", "")


def test_open_sign_up_signs_in_at_once_and_mails_a_verification_link(
    app_client: TestClient, world: World
) -> None:
    set_mode(world, "open")
    response = submit(app_client, "/signup", signup_form("bob@example.com", display_name="Bob"))
    assert response.status_code == 303 and response.headers["location"] == "/"
    assert "Welcome, Bob" in app_client.get("/").text
    account = app_client.get("/settings/account").text
    assert "not verified" in account and "Send a new verification link" in account
    secret = token_in(mails_to(world, "bob@example.com")[0], "/account/verify/")
    confirm = app_client.get(f"/account/verify/{secret}")
    assert confirm.status_code == 200 and "Confirm my email" in confirm.text
    # The link alone changes nothing (a mail scanner may follow it): the button does.
    assert "not verified" in app_client.get("/settings/account").text
    done = submit(app_client, f"/account/verify/{secret}", {})
    assert done.status_code == 303 and done.headers["location"] == "/settings/account"
    page = app_client.get("/settings/account").text
    assert "is verified" in page and "not verified" not in page
    assert app_client.get(f"/account/verify/{secret}").status_code == 404


def test_sign_up_problems_show_beside_their_fields_and_keep_what_was_typed(
    app_client: TestClient, world: World
) -> None:
    set_mode(world, "open")
    short = submit(app_client, "/signup", signup_form("bob@example.com", "short", display_name="B"))
    assert short.status_code == 422
    page = BeautifulSoup(short.text, "html.parser")
    assert page.find(id="password-error") is not None
    assert page.find("input", id="email")["value"] == "bob@example.com"
    assert page.find("input", id="display_name")["value"] == "B"
    mismatch = submit(
        app_client,
        "/signup",
        {"email": "bob@example.com", "password": "password123", "password_again": "other-pass"},
    )
    assert mismatch.status_code == 422 and "password_again-error" in mismatch.text
    world.user("taken@example.com")
    taken = submit(app_client, "/signup", signup_form("taken@example.com"))
    assert taken.status_code == 409 and "already exists" in taken.text


def test_over_long_sign_up_fields_come_back_in_the_form(
    app_client: TestClient, world: World
) -> None:
    set_mode(world, "open")
    long_email = "a" * 330 + "@example.com"
    email = submit(app_client, "/signup", signup_form(long_email, display_name="Bob"))
    assert email.status_code == 422
    page = BeautifulSoup(email.text, "html.parser")
    assert "at most 320 characters" in page.find(id="email-error").get_text()
    assert page.find("input", id="display_name")["value"] == "Bob"
    assert page.find("input", id="password").get("value") is None  # never sent back
    name = submit(app_client, "/signup", signup_form("bob@example.com", display_name="B" * 401))
    assert name.status_code == 422
    page = BeautifulSoup(name.text, "html.parser")
    assert "at most 200 characters" in page.find(id="display_name-error").get_text()
    assert page.find("input", id="email")["value"] == "bob@example.com"
    assert "body." not in name.text


def test_sign_in_with_empty_fields_shows_the_form_again(app_client: TestClient) -> None:
    response = submit(app_client, "/signin", {"email": "bob@example.com"})
    assert response.status_code == 422
    page = BeautifulSoup(response.text, "html.parser")
    assert "Enter your email and your password." in page.find(role="alert").get_text()
    assert page.find("input", id="email")["value"] == "bob@example.com"
    assert "body." not in response.text


def test_a_hostile_display_name_comes_out_escaped(app_client: TestClient, world: World) -> None:
    set_mode(world, "open")
    submit(app_client, "/signup", signup_form("bob@example.com", display_name=HOSTILE))
    page = app_client.get("/").text
    assert "<script>alert(1)</script>" not in page and "<img src=x" not in page
    assert "&lt;script&gt;" in page


def test_invite_mode_needs_an_admins_invite(
    app_client: TestClient, admin: WebUser, world: World, runtime: Runtime
) -> None:
    set_mode(world, "invite")
    assert "needs an invite" in app_client.get("/signup").text
    assert submit(app_client, "/signup", signup_form("bob@example.com")).status_code == 403
    assert admin.post("/admin/invites", {"email": "Bob@Example.com"}).status_code == 303
    made = admin.get("/admin/invites")
    assert made.status_code == 200 and made.headers["cache-control"] == "no-store"
    shown = BeautifulSoup(made.text, "html.parser").find(id="invite-link").get_text()
    secret = token_in(mails_to(world, "bob@example.com")[0], "/signup?invite=")
    assert shown == f"/signup?invite={secret}"
    assert 'data-copy="invite-link"' in made.text
    listing = admin.page("/admin/invites")
    assert listing.find(id="invite-link") is None and secret not in str(listing)
    assert "open" in listing.find("td", string="bob@example.com").parent.get_text()
    page = BeautifulSoup(app_client.get(f"/signup?invite={secret}").text, "html.parser")
    assert page.find("input", id="email")["value"] == "bob@example.com"
    assert page.find("input", id="email").has_attr("readonly")
    response = submit(
        app_client,
        "/signup",
        signup_form("bob@example.com", invite=secret),
        f"/signup?invite={secret}",
    )
    assert response.status_code == 303
    account = app_client.get("/settings/account").text
    assert "bob@example.com" in account and "not verified" not in account
    with browser(runtime) as other:
        again = submit(other, "/signup", signup_form("eve@example.com", invite=secret))
        assert again.status_code == 403
        assert "not valid" in other.get(f"/signup?invite={secret}").text
    row = admin.page("/admin/invites").find("td", string="bob@example.com").parent
    assert "used" in row.get_text()


def test_invites_are_for_admins_only_and_need_the_csrf_token(
    signed_in: WebUser, admin: WebUser, world: World
) -> None:
    set_mode(world, "invite")
    assert signed_in.get("/admin/invites").status_code == 403
    assert signed_in.post("/admin/invites", {"email": "x@example.com"}).status_code == 403
    refused = admin.client.post("/admin/invites", data={"email": "x@example.com"})
    assert refused.status_code == 403
    bad = admin.post("/admin/invites", {"email": HOSTILE})
    assert bad.status_code == 422 and "email-error" in bad.text
    assert "<script>alert(1)</script>" not in bad.text
    assert mails_to(world, "x@example.com") == []


def test_a_dead_verification_link_is_a_404(app_client: TestClient) -> None:
    response = app_client.get("/account/verify/not-a-real-token")
    assert response.status_code == 404 and "not valid" in response.text
    assert submit(app_client, "/account/verify/nope", {}, "/signin").status_code == 404


# --- forgotten password ---------------------------------------------------------------------


def test_the_answer_is_the_same_for_every_address(app_client: TestClient, world: World) -> None:
    world.user("ana@example.com")
    set_mode(world, "open")
    with browser(world.rt) as other:
        submit(other, "/signup", signup_form("fresh@example.com"))
    answers = set()
    for email in ("ana@example.com", "nobody@example.com", "fresh@example.com"):
        response = submit(app_client, "/password/forgot", {"email": email})
        assert response.status_code == 200
        answers.add(response.text.replace(email, "EMAIL"))
    assert len(answers) == 1
    assert len(mails_to(world, "ana@example.com")) == 1
    assert mails_to(world, "nobody@example.com") == []
    # Its verification link, then the reset that lets the mailbox's owner take it over.
    assert len(mails_to(world, "fresh@example.com")) == 2


def test_reset_sets_the_password_once_and_signs_out_everywhere(
    signed_in: WebUser, app_client: TestClient, world: World, clock: ManualClock
) -> None:
    submit(app_client, "/password/forgot", {"email": "ana@example.com"})
    stale = token_in(mails_to(world, "ana@example.com")[0], "/password/reset/")
    clock.advance(minutes=31)
    assert app_client.get(f"/password/reset/{stale}").status_code == 404
    clock.advance(minutes=1)
    submit(app_client, "/password/forgot", {"email": "ana@example.com"})
    secret = token_in(mails_to(world, "ana@example.com")[-1], "/password/reset/")
    path = f"/password/reset/{secret}"
    assert app_client.get(path).status_code == 200
    short = submit(app_client, path, {"password": "short", "password_again": "short"})
    assert short.status_code == 422 and "password-error" in short.text
    done = submit(
        app_client, path, {"password": "brand-new-pass", "password_again": "brand-new-pass"}
    )
    assert done.status_code == 303 and done.headers["location"] == "/"
    assert "bg_session=" in done.headers["set-cookie"]
    dashboard = app_client.get("/")
    assert dashboard.status_code == 200  # signed in with a fresh session
    assert "API tokens keep working" in dashboard.text  # sessions end; tokens are not sessions
    assert signed_in.get("/").status_code == 303  # the old session is dead
    assert app_client.get(path).status_code == 404  # single use
    again = submit(app_client, path, {"password": "other-pass-1", "password_again": "other-pass-1"})
    assert again.status_code == 404
    with browser(world.rt) as third:
        token = csrf_of(third.get("/signin").text)
        old = third.post(
            "/signin", data={"email": "ana@example.com", "password": PASSWORD, "csrf_token": token}
        )
        assert old.status_code == 401
        WebUser.sign_in(third, "ana@example.com", "brand-new-pass")


def test_reset_requests_are_throttled(
    app_client: TestClient, world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(world.rt.settings, "signin_failures_per_address", 3)
    for _ in range(3):
        assert submit(app_client, "/password/forgot", {"email": "x@example.com"}).status_code == 200
    response = submit(app_client, "/password/forgot", {"email": "x@example.com"})
    assert response.status_code == 429 and "Too many" in response.text


def test_reset_links_never_take_the_request_host(
    app_client: TestClient, world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    world.user("ana@example.com")
    hostile = {"host": "evil.example", "x-forwarded-host": "evil.example"}
    token = csrf_of(app_client.get("/password/forgot").text)
    data = {"email": "ana@example.com", "csrf_token": token}
    app_client.post("/password/forgot", data=data, headers=hostile)
    [body] = mails_to(world, "ana@example.com")
    assert "evil.example" not in body and re.search(r"^/password/reset/\S+$", body, re.M)
    monkeypatch.setattr(world.rt.settings, "public_url", "https://bench.example.org")
    world.rt.clock.advance(seconds=1)  # type: ignore[attr-defined]  # mails are listed by time
    app_client.post("/password/forgot", data=data, headers=hostile)
    body = mails_to(world, "ana@example.com")[-1]
    assert "evil.example" not in body and "https://bench.example.org/password/reset/" in body


class FakeSMTP:
    """Stands in for smtplib.SMTP: records each message it is handed."""

    sent: list[tuple[str, str]]

    def __init__(self, host: str, port: int, timeout: float) -> None:
        self.host = host

    def __enter__(self) -> FakeSMTP:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def send_message(self, message: EmailMessage) -> None:
        FakeSMTP.sent.append((str(message["To"]), message.get_content()))


def test_account_mail_is_sent_after_the_response_when_smtp_is_set(
    app_client: TestClient, world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    world.user("ana@example.com")
    monkeypatch.setattr(FakeSMTP, "sent", [], raising=False)
    monkeypatch.setattr("smtplib.SMTP", FakeSMTP)
    monkeypatch.setattr(world.rt.settings, "smtp_url", "smtp://mail.example.org")
    for email in ("ana@example.com", "nobody@example.com"):
        assert submit(app_client, "/password/forgot", {"email": email}).status_code == 200
    [(to, body)] = FakeSMTP.sent
    assert to == "ana@example.com" and "/password/reset/" in body

    def statuses(ctx: Context) -> list[str]:
        return list(ctx.session.scalars(select(OutboxEmail.status)))

    assert world.ctx_call(OPERATOR, statuses) == ["sent"]


@pytest.mark.parametrize(
    ("path", "data"),
    [
        ("/signup", signup_form("bob@example.com")),
        ("/password/forgot", {"email": "ana@example.com"}),
        ("/password/reset/some-token", {"password": "x" * 10, "password_again": "x" * 10}),
        ("/account/verify/some-token", {}),
    ],
)
def test_anonymous_forms_need_the_csrf_token(
    app_client: TestClient, world: World, path: str, data: dict[str, str]
) -> None:
    set_mode(world, "open")
    world.user("ana@example.com")
    app_client.get("/signin")  # the browser has its anonymous cookie, but the form lacks it
    response = app_client.post(path, data=data)
    assert response.status_code == 403 and "expired" in response.text
    assert mails_to(world, "bob@example.com") == mails_to(world, "ana@example.com") == []
