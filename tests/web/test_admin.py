"""Admin pages: refused to everyone but admins; users, credits, settings and the audit log work."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
from bs4 import BeautifulSoup
from fastapi.testclient import TestClient

from benchgen.app import create_app
from benchgen.core.clock import ManualClock
from benchgen.services import audit, deployment
from benchgen.services.accounts import _ledger, credits, users
from benchgen.services.runtime import Runtime
from tests.support import OPERATOR, World, sql_sent
from tests.web.support import WebUser

PAGES = ["/admin", "/admin/users", "/admin/settings", "/admin/reports", "/admin/audit"]
HOSTILE = '"><img src=x onerror=alert(1)>'


@pytest.fixture
def admin(runtime: Runtime, world: World) -> Iterator[WebUser]:
    """Root, an administrator, signed in."""
    world.user("root@example.com", admin=True)
    with TestClient(create_app(runtime.settings, runtime), follow_redirects=False) as client:
        yield WebUser.sign_in(client, "root@example.com")


def user_row(page: BeautifulSoup, email: str) -> BeautifulSoup:
    header = page.find("th", string=email)
    assert header is not None, f"{email} is not listed"
    return header.find_parent("tr")


def test_admin_pages_refuse_everyone_else(signed_in: WebUser, app_client: TestClient) -> None:
    for path in PAGES:
        response = signed_in.get(path)
        assert response.status_code == 403, path
        assert "needs an administrator" in response.text
        assert app_client.get(path).status_code == 303  # signed out: to the sign-in page
    posts = {
        "/admin/users": {"email": "x@example.com", "password": "password123"},
        "/admin/settings": {"key": "agent_allow_create", "value": "false"},
    }
    for path, data in posts.items():
        assert signed_in.post(path, data).status_code == 403, path
    assert "Admin" not in [a.get_text() for a in signed_in.page("/").select("nav a")]


def test_admin_pages_render_for_an_admin(admin: WebUser) -> None:
    for path in PAGES:
        page = admin.page(path)
        current = page.select_one('ul.tabs a[aria-current="page"]')
        assert current is not None and current["href"] == path, path
    assert "Admin" in [a.get_text() for a in admin.page("/").select("nav a")]


def test_an_admin_is_offered_no_button_to_disable_their_own_account(admin: WebUser) -> None:
    admin.post("/admin/users", {"email": "ana@example.com", "password": "password123"})
    page = admin.page("/admin/users")
    buttons = {
        email: [b.get_text(" ", strip=True) for b in user_row(page, email).find_all("button")]
        for email in ("root@example.com", "ana@example.com")
    }
    assert "Disable ana@example.com" in buttons["ana@example.com"]
    assert not [b for b in buttons["root@example.com"] if b.startswith("Disable")]
    assert "(you)" in user_row(page, "root@example.com").get_text()


def test_create_find_disable_and_enable_a_user(admin: WebUser, world: World) -> None:
    created = admin.post(
        "/admin/users",
        {"email": "New@Example.com", "password": "password123", "display_name": HOSTILE},
    )
    assert created.status_code == 303
    page = admin.page("/admin/users?q=new")
    row = user_row(page, "new@example.com")
    assert "Created the account new@example.com." in page.get_text()
    assert "<img src=x" not in admin.get("/admin/users").text
    assert row.find("td").get_text() == HOSTILE
    assert [th.get_text() for th in page.select("tbody th")] == ["new@example.com"]
    assert admin.page("/admin/users?q=%25").select("tbody th") == []
    taken = admin.post("/admin/users", {"email": "new@example.com", "password": "password123"})
    assert taken.status_code == 409 and "already exists" in taken.text
    short = admin.post("/admin/users", {"email": "b@example.com", "password": "short"})
    assert short.status_code == 422
    kept = BeautifulSoup(short.text, "html.parser")
    assert kept.select_one("#new-email")["value"] == "b@example.com"
    assert kept.select_one("#create-error").get_text().startswith("password:")
    target = world.do(OPERATOR, users.get_user_by_email, "new@example.com")
    disabled = admin.post(f"/admin/users/{target.id}/active", {"active": "false"})
    assert disabled.status_code == 303
    assert not world.do(OPERATOR, users.get_user_by_email, "new@example.com").is_active
    row = user_row(admin.page("/admin/users"), "new@example.com")
    assert "disabled" in row.get_text()
    assert "Enable new@example.com" in [b.get_text() for b in row.find_all("button")]
    admin.post(f"/admin/users/{target.id}/active", {"active": "true"})
    assert world.do(OPERATOR, users.get_user_by_email, "new@example.com").is_active
    assert admin.post("/admin/users/usr_nope/active", {"active": "true"}).status_code == 404


def test_an_admin_makes_and_unmakes_admins_from_their_next_request(
    admin: WebUser, world: World, signed_in: WebUser
) -> None:
    """There was no way to change who is an admin once an account existed."""
    ana = world.do(OPERATOR, users.get_user_by_email, "ana@example.com")
    assert signed_in.get("/admin/users").status_code == 403
    assert (
        "Make admin ana@example.com" in user_row(admin.page("/admin/users"), ana.email).get_text()
    )
    assert admin.post(f"/admin/users/{ana.id}/admin", {"admin": "true"}).status_code == 303
    assert "ana@example.com is now an administrator." in admin.get("/admin/users").text
    assert signed_in.get("/admin/users").status_code == 200  # the same session, at once
    assert admin.post(f"/admin/users/{ana.id}/admin", {"admin": "false"}).status_code == 303
    assert signed_in.get("/admin/users").status_code == 403
    root = world.do(OPERATOR, users.get_user_by_email, "root@example.com")
    own = admin.post(f"/admin/users/{root.id}/admin", {"admin": "false"})
    assert own.status_code == 409 and "cannot remove your own admin rights" in own.text
    assert world.do(OPERATOR, users.get_user_by_email, "root@example.com").is_admin
    assert signed_in.post(f"/admin/users/{root.id}/admin", {"admin": "false"}).status_code == 403
    done = [e.action for e in world.do(OPERATOR, audit.list_events, ana.id)]
    assert done.count("user.grant_admin") == 1 and done.count("user.revoke_admin") == 1


def test_grant_credits(admin: WebUser, world: World, runtime: Runtime) -> None:
    ana = world.user("ana@example.com")
    granted = admin.post(f"/admin/users/{ana}/credits", {"amount": "250", "note": "welcome"})
    assert granted.status_code == 303
    assert "Granted 250 credits; the balance is now 250." in admin.get("/admin/users").text
    assert world.do(OPERATOR, _ledger.balance_of, ana) == 250
    refused = admin.post(f"/admin/users/{ana}/credits", {"amount": "0"})
    assert refused.status_code == 422 and "Credits not granted" in refused.text
    assert world.do(OPERATOR, _ledger.balance_of, ana) == 250


def test_each_account_shows_its_balance_in_a_constant_number_of_queries(
    admin: WebUser, world: World, runtime: Runtime
) -> None:
    def balance_in(page: BeautifulSoup, email: str) -> str:
        return user_row(page, email).find_all("td")[-1].p.get_text(" ", strip=True)

    world.user("ana@example.com", credits_=250)
    world.user("bo@example.com")
    with sql_sent(runtime) as few:
        page = admin.page("/admin/users")
    assert balance_in(page, "ana@example.com") == "Balance: 250"
    assert balance_in(page, "bo@example.com") == "Balance: 0"

    for n in range(5):
        world.user(f"more{n}@example.com", credits_=10 + n)
    with sql_sent(runtime) as many:
        page = admin.page("/admin/users")
    assert balance_in(page, "more4@example.com") == "Balance: 14"
    assert len(many) == len(few), "a query per account"


def test_settings_are_a_form_per_key(admin: WebUser, world: World) -> None:
    page = admin.page("/admin/settings")
    switch = page.select_one("#value-agent_allow_create")
    assert switch["type"] == "checkbox" and switch.has_attr("checked")
    assert page.select_one("#value-agent_turn_cap_s")["type"] == "number"
    # An unticked box sends no value: the switch goes off.
    assert admin.post("/admin/settings", {"key": "agent_allow_create"}).status_code == 303
    assert world.do(OPERATOR, deployment.list_settings)["agent_allow_create"] is False
    page = admin.page("/admin/settings")
    assert not page.select_one("#value-agent_allow_create").has_attr("checked")
    assert "agent_allow_create is now False" in page.get_text()
    admin.post("/admin/settings", {"key": "agent_allow_create", "value": "true"})
    assert world.do(OPERATOR, deployment.list_settings)["agent_allow_create"] is True
    admin.post("/admin/settings", {"key": "agent_turn_cap_s", "value": "120"})
    assert world.do(OPERATOR, deployment.list_settings)["agent_turn_cap_s"] == 120
    wrong = admin.post("/admin/settings", {"key": "agent_turn_cap_s", "value": "soon"})
    assert wrong.status_code == 422
    assert (
        "whole number"
        in BeautifulSoup(wrong.text, "html.parser").select_one("#error-agent_turn_cap_s").get_text()
    )
    unknown = admin.post("/admin/settings", {"key": "database_url", "value": "x"})
    assert unknown.status_code == 422


def test_sign_up_mode_is_a_choice(admin: WebUser, world: World) -> None:
    select = admin.page("/admin/settings").select_one("select#value-signup_mode")
    assert [o["value"] for o in select.find_all("option")] == ["open", "invite", "closed"]
    assert select.find("option", selected=True)["value"] == "closed"
    assert admin.post("/admin/settings", {"key": "signup_mode", "value": "open"}).status_code == 303
    assert world.do(OPERATOR, deployment.list_settings)["signup_mode"] == "open"
    page = admin.page("/admin/settings")
    assert page.select_one("#value-signup_mode option[selected]")["value"] == "open"
    wrong = admin.post("/admin/settings", {"key": "signup_mode", "value": "everyone"})
    assert wrong.status_code == 422 and "takes one of open, invite, closed" in wrong.text
    assert world.do(OPERATOR, deployment.list_settings)["signup_mode"] == "open"


def test_the_audit_log_filters(admin: WebUser, world: World, clock: ManualClock) -> None:
    ana = world.user("ana@example.com")
    clock.advance(days=2)
    world.do(OPERATOR, credits.grant_credits, ana, 5)
    admin = WebUser.sign_in(admin.client, "root@example.com")  # the first session is too old
    admin.post("/admin/settings", {"key": "agent_allow_edit", "value": "false"})

    def actions(query: str) -> list[str]:
        page = admin.page(f"/admin/audit?{query}")
        # Sorted: events of the same instant come in no particular order.
        return sorted(row.select("td")[2].get_text() for row in page.select("tbody tr"))

    assert actions("") == [
        "credits.grant",
        "deployment.set",
        "session.start",
        "session.start",
        "user.create",
        "user.create",
    ]
    assert actions("action=credits.grant") == ["credits.grant"]
    # A sign-in is the person's own act, through the web door: both filters find it.
    assert actions("door=web") == ["deployment.set", "session.start", "session.start"]
    assert actions("door=cli") == ["credits.grant", "user.create", "user.create"]
    assert actions("door=system") == []
    assert actions("user=root%40example.com") == [
        "deployment.set",
        "session.start",
        "session.start",
    ]
    today = clock.now().date()
    assert actions(f"from={today}") == ["credits.grant", "deployment.set", "session.start"]
    before = today - timedelta(days=1)
    assert actions(f"to={before}") == ["session.start", "user.create", "user.create"]
    assert actions(f"from={before}&to={before}") == []
    # The date picker offers the calendar's last day: it has no next midnight to stop before.
    assert actions("to=9999-12-31") == actions("")
    unknown = admin.get("/admin/audit?user=nobody%40example.com")
    assert unknown.status_code == 422 and "No account with email" in unknown.text
    bad_day = admin.get("/admin/audit?from=yesterday")
    assert bad_day.status_code == 422 and "must be a date" in bad_day.text
    backwards = admin.get(f"/admin/audit?from={today}&to={before}")
    assert backwards.status_code == 422 and "is before From" in backwards.text
    page = admin.page("/admin/audit?action=deployment.set")
    assert page.select_one("#f-action option[selected]")["value"] == "deployment.set"


def test_admin_forms_need_the_csrf_token(admin: WebUser, world: World) -> None:
    ana = world.user("ana@example.com")
    for path, data in {
        "/admin/users": {"email": "x@example.com", "password": "password123"},
        f"/admin/users/{ana}/active": {"active": "false"},
        f"/admin/users/{ana}/credits": {"amount": "5"},
        "/admin/settings": {"key": "agent_allow_create", "value": "false"},
        "/admin/reports/rep_x/resolve": {},
    }.items():
        assert admin.client.post(path, data=data).status_code == 403, path
    assert world.do(OPERATOR, _ledger.balance_of, ana) == 0
    assert world.do(OPERATOR, users.get_user_by_email, "ana@example.com").is_active


def test_the_audit_log_pages_keep_the_filters(admin: WebUser, world: World) -> None:
    ana = world.user("ana@example.com")
    for _ in range(52):
        world.do(OPERATOR, credits.grant_credits, ana, 1)
    first = admin.page("/admin/audit?action=credits.grant")
    assert len(first.select("tbody tr")) == 50
    older = first.find("a", string="Older")
    assert older is not None and "action=credits.grant" in older["href"]
    rest = admin.page(str(older["href"]))
    assert len(rest.select("tbody tr")) == 2 and rest.find("a", string="Older") is None
    assert rest.find("a", string="Newer") is not None
