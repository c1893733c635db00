"""Settings pages: the account (verification, password change), API tokens, and billing."""

from __future__ import annotations

from bs4 import BeautifulSoup
from fastapi.testclient import TestClient
from sqlalchemy import select

from benchgen.app import create_app
from benchgen.core.clock import ManualClock
from benchgen.core.context import Context
from benchgen.db.tables import ApiToken
from benchgen.services import deployment
from benchgen.services.accounts import credits, users
from benchgen.services.runtime import Runtime
from tests.services.test_account_links import mails_to
from tests.support import OPERATOR, World
from tests.web.support import PASSWORD, WebUser, csrf_of

HOSTILE = '<script>alert(1)</script>"><img src=x onerror=alert(1)>'
PAGES = (
    "/settings/account",
    "/settings/tokens",
    "/settings/notifications",
    "/settings/billing",
)


def second_browser(runtime: Runtime, password: str = PASSWORD) -> WebUser:
    """Ana in another browser (sign-in must succeed)."""
    client = TestClient(create_app(runtime.settings, runtime), follow_redirects=False)
    return WebUser.sign_in(client, "ana@example.com", password)


def test_each_settings_page_has_the_tabs_with_itself_current(signed_in: WebUser) -> None:
    for path in PAGES:
        page = signed_in.page(path)
        tabs = page.find("nav", attrs={"aria-label": "Settings"})
        assert [a["href"] for a in tabs.find_all("a")] == list(PAGES)
        assert tabs.find("a", attrs={"aria-current": "page"})["href"] == path


def test_settings_pages_need_a_session(app_client: TestClient) -> None:
    for path in PAGES:
        response = app_client.get(path)
        assert response.status_code == 303 and response.headers["location"].startswith("/signin")


# --- account --------------------------------------------------------------------------------


def test_the_account_page_shows_a_verified_email_without_a_resend_button(
    signed_in: WebUser,
) -> None:
    page = signed_in.page("/settings/account")
    assert "ana@example.com" in page.get_text() and "not verified" not in page.get_text()
    assert page.find("form", action="/settings/account/verify") is None
    assert signed_in.post("/settings/account/verify").headers["location"] == "/settings/account"
    assert "verified already" in signed_in.get("/settings/account").text


def test_an_unverified_person_can_ask_for_a_new_link(
    runtime: Runtime, world: World, app_client: TestClient
) -> None:
    world.do(OPERATOR, deployment.set_setting, "signup_mode", "open")
    token = csrf_of(app_client.get("/signup").text)
    app_client.post(
        "/signup",
        data={
            "email": "bob@example.com",
            "password": PASSWORD,
            "password_again": PASSWORD,
            "csrf_token": token,
        },
    )
    bob = WebUser(app_client)
    bob.csrf = csrf_of(app_client.get("/").text)
    assert bob.page("/settings/account").find("form", action="/settings/account/verify")
    assert app_client.post("/settings/account/verify").status_code == 403  # no CSRF token
    assert len(mails_to(world, "bob@example.com")) == 1
    response = bob.post("/settings/account/verify")
    assert response.status_code == 303
    assert "We sent a new link to bob@example.com" in bob.get("/settings/account").text
    assert len(mails_to(world, "bob@example.com")) == 2


def test_changing_the_password_signs_out_the_other_sessions_only(
    signed_in: WebUser, runtime: Runtime
) -> None:
    other = second_browser(runtime)
    form = {"new_password": "brand-new-pass", "new_password_again": "brand-new-pass"}
    wrong = signed_in.post("/settings/account/password", {**form, "current_password": "nope-nope"})
    assert wrong.status_code == 422
    assert "not your current password" in wrong.text and "current_password-error" in wrong.text
    mismatch = signed_in.post(
        "/settings/account/password",
        {"current_password": PASSWORD, "new_password": "abcdefgh1", "new_password_again": "x"},
    )
    assert mismatch.status_code == 422 and "new_password_again-error" in mismatch.text
    short = signed_in.post(
        "/settings/account/password",
        {"current_password": PASSWORD, "new_password": "short", "new_password_again": "short"},
    )
    assert short.status_code == 422 and "new_password-error" in short.text
    unsent = signed_in.client.post(
        "/settings/account/password", data={**form, "current_password": PASSWORD}
    )
    assert unsent.status_code == 403
    assert other.get("/").status_code == 200  # nothing changed yet
    done = signed_in.post("/settings/account/password", {**form, "current_password": PASSWORD})
    assert done.status_code == 303 and done.headers["location"] == "/settings/account"
    assert "1 other session(s) were signed out" in signed_in.get("/settings/account").text
    assert other.get("/").status_code == 303
    assert signed_in.get("/").status_code == 200
    second_browser(runtime, password="brand-new-pass")


# --- API tokens -----------------------------------------------------------------------------


def test_a_new_token_is_shown_once_and_works_until_revoked(
    signed_in: WebUser, world: World
) -> None:
    made = signed_in.post(
        "/settings/tokens", {"name": "laptop", "scopes": ["read", "runs"], "expires_days": "30"}
    )
    # Post/redirect/get: a reload of the page that shows the secret never makes a second token.
    assert made.status_code == 303 and made.headers["location"] == "/settings/tokens"
    once = signed_in.get("/settings/tokens")
    assert once.headers["cache-control"] == "no-store"
    page = signed_in.page("/settings/tokens")
    shown = BeautifulSoup(once.text, "html.parser")
    secret = shown.find(id="new-token").get_text()
    assert secret.startswith("bgp_") and shown.find("button", attrs={"data-copy": "new-token"})
    me = signed_in.client.get("/api/v1/me", headers={"Authorization": f"Bearer {secret}"})
    assert me.status_code == 200 and me.json()["scopes"] == ["read", "runs"]
    assert secret not in str(page) and page.find(id="new-token") is None
    row = page.find("td", string="laptop").parent
    assert "read, runs" in row.get_text() and f"…{secret[-4:]}" in row.get_text()
    assert "active" in row.get_text()
    revoke = row.find("form")["action"]
    assert signed_in.client.post(revoke).status_code == 403  # no CSRF token
    assert signed_in.post(revoke).status_code == 303
    gone = signed_in.client.get("/api/v1/me", headers={"Authorization": f"Bearer {secret}"})
    assert gone.status_code == 401
    assert "revoked" in signed_in.page("/settings/tokens").find("td", string="laptop").parent.text


def test_token_problems_show_beside_the_form(signed_in: WebUser) -> None:
    none = signed_in.post("/settings/tokens", {"name": "x", "expires_days": ""})
    assert none.status_code == 422 and "scopes-error" in none.text
    days = signed_in.post("/settings/tokens", {"name": "x", "scopes": "read", "expires_days": "9x"})
    assert days.status_code == 422 and "expires_days-error" in days.text
    long = signed_in.post(
        "/settings/tokens", {"name": "x", "scopes": "read", "expires_days": "999"}
    )
    assert long.status_code == 422 and "expires_days-error" in long.text
    blank = signed_in.post("/settings/tokens", {"name": " ", "scopes": "read"})
    assert blank.status_code == 422 and "name-error" in blank.text
    # Every field's problem at once: fixing one and sending again only to meet the next.
    all_wrong = signed_in.post("/settings/tokens", {"name": " ", "expires_days": "999"})
    assert all_wrong.status_code == 422
    for field in ("name", "scopes", "expires_days"):
        assert f"{field}-error" in all_wrong.text, field
    assert signed_in.page("/settings/tokens").find("td") is None  # nothing was made


def test_token_forms_need_the_csrf_token(signed_in: WebUser, world: World) -> None:
    response = signed_in.client.post("/settings/tokens", data={"name": "x", "scopes": "read"})
    assert response.status_code == 403

    def count(ctx: Context) -> int:
        return len(list(ctx.session.scalars(select(ApiToken.id))))

    assert world.ctx_call(OPERATOR, count) == 0


def test_a_planted_secret_cookie_shows_nothing(signed_in: WebUser, world: World) -> None:
    bob = world.user("bob@example.com")
    bobs = world.token(bob, ["read"])
    for planted in (bobs, "bgp_not-a-token"):
        signed_in.client.cookies.set("bg_new_token", planted, path="/settings/tokens")
        page = signed_in.page("/settings/tokens")
        assert page.find(id="new-token") is None and bobs not in str(page)


def test_a_hostile_token_name_comes_out_escaped(signed_in: WebUser) -> None:
    made = signed_in.post("/settings/tokens", {"name": HOSTILE, "scopes": "read"})
    assert made.status_code == 303
    for html in (signed_in.get("/settings/tokens").text, signed_in.get("/settings/tokens").text):
        assert "<script>alert(1)</script>" not in html and "<img src=x" not in html
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_someone_elses_token_cannot_be_revoked(signed_in: WebUser, world: World) -> None:
    bob = world.user("bob@example.com")
    secret = world.token(bob, ["read"])

    def bobs(ctx: Context) -> str:
        return str(ctx.session.scalar(select(ApiToken.id).where(ApiToken.user_id == bob)))

    assert (
        signed_in.post(f"/settings/tokens/{world.ctx_call(OPERATOR, bobs)}/revoke").status_code
        == 404
    )
    me = signed_in.client.get("/api/v1/me", headers={"Authorization": f"Bearer {secret}"})
    assert me.status_code == 200


# --- billing --------------------------------------------------------------------------------


def test_billing_shows_the_balance_and_the_ledger_a_page_at_a_time(
    signed_in: WebUser, world: World, clock: ManualClock
) -> None:
    ana_id = world.do(OPERATOR, users.get_user_by_email, "ana@example.com").id
    for n in range(55):
        clock.advance(seconds=1)
        world.do(OPERATOR, credits.grant_credits, ana_id, 1, f"gift {n} {HOSTILE}")
    page = signed_in.page("/settings/billing")
    assert "1055" in page.find(class_="big").get_text()
    rows = page.find("tbody").find_all("tr")
    assert len(rows) == 50 and "gift 54" in rows[0].get_text() and "+1" in rows[0].get_text()
    assert "<script>" not in signed_in.get("/settings/billing").text
    older = page.find("a", string="Older lines")["href"]
    rest = signed_in.page(older)
    lines = rest.find("tbody").find_all("tr")
    assert len(lines) == 6 and "+1000" in lines[-1].get_text()
    assert rest.find("a", string="Older lines") is None
    assert rest.find("a", string="Newest lines")["href"] == "/settings/billing"
    assert signed_in.get("/settings/billing?before=nonsense").status_code == 422


def test_wrong_current_passwords_are_counted_and_throttled(
    signed_in: WebUser, runtime: Runtime
) -> None:
    form = {"new_password": "brand-new-pass", "new_password_again": "brand-new-pass"}
    for _ in range(runtime.settings.signin_failures_per_account):
        wrong = signed_in.post(
            "/settings/account/password", {**form, "current_password": "nope-nope"}
        )
        assert wrong.status_code == 422
    right = signed_in.post("/settings/account/password", {**form, "current_password": PASSWORD})
    assert right.status_code == 429  # the guesses were kept although each page was an error
