"""What the account pages record comes through the web door, by the person concerned: sign-in,
sign-out, sign-up (open and by invite), email verification and a password reset."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from benchgen.db.tables import AuditEvent, User
from benchgen.services import audit
from benchgen.services.accounts import signup
from tests.services.test_account_links import mails_to, token_in
from tests.support import OPERATOR, World
from tests.web.support import PASSWORD, WebUser, csrf_of
from tests.web.test_accounts import set_mode, signup_form, submit

# The door filter is a prefix match in SQL: both backends.
pytestmark = pytest.mark.both_backends


def recorded(world: World) -> set[tuple[str, str | None, str]]:
    """(action, acting user's email, door) of every audit row but the operator's (rows of one
    instant come in no particular order, so a set)."""
    query = (
        select(AuditEvent.action, User.email, AuditEvent.door)
        .outerjoin(User, User.id == AuditEvent.user_id)
        .where(AuditEvent.door != "cli")
    )
    rows = world.ctx_call(OPERATOR, lambda ctx: ctx.session.execute(query).all())
    return {(str(action), email, door) for action, email, door in rows}


def test_sign_in_and_sign_out_are_the_persons_own_through_the_web(
    app_client: TestClient, world: World
) -> None:
    world.user("ana@example.com")
    ana = WebUser.sign_in(app_client, "ana@example.com")
    assert ana.post("/signout").status_code == 303
    assert recorded(world) == {
        ("session.start", "ana@example.com", "web"),
        ("session.end", "ana@example.com", "web"),
    }
    # The admin's door filter finds both.
    doors = world.ctx_call(OPERATOR, lambda ctx: audit.list_events(ctx, door="web"))
    assert sorted(str(event.action) for event in doors) == ["session.end", "session.start"]


def test_signing_in_over_anothers_session_ends_it_as_theirs(
    app_client: TestClient, world: World
) -> None:
    world.user("ana@example.com")
    world.user("bob@example.com")
    ana = WebUser.sign_in(app_client, "ana@example.com")
    # Bob signs in on the browser Ana left signed in: her session ends with it.
    bob = ana.post("/signin", {"email": "bob@example.com", "password": PASSWORD})
    assert bob.status_code == 303
    assert recorded(world) == {
        ("session.start", "ana@example.com", "web"),
        ("session.end", "ana@example.com", "web"),
        ("session.start", "bob@example.com", "web"),
    }


def test_open_sign_up_and_verifying_the_email_are_recorded_through_the_web(
    app_client: TestClient, world: World
) -> None:
    set_mode(world, "open")
    assert submit(app_client, "/signup", signup_form("bob@example.com")).status_code == 303
    secret = token_in(mails_to(world, "bob@example.com")[0], "/account/verify/")
    assert submit(app_client, f"/account/verify/{secret}", {}).status_code == 303
    assert recorded(world) == {
        ("user.signup", "bob@example.com", "web"),
        ("session.start", "bob@example.com", "web"),
        ("email.verify", "bob@example.com", "web"),
    }


def test_accepting_an_invite_is_recorded_through_the_web(
    app_client: TestClient, world: World
) -> None:
    set_mode(world, "invite")
    world.do(OPERATOR, signup.create_invite, "bob@example.com")
    secret = token_in(mails_to(world, "bob@example.com")[0], "/signup?invite=")
    form = signup_form("bob@example.com", invite=secret)
    assert submit(app_client, "/signup", form, f"/signup?invite={secret}").status_code == 303
    assert recorded(world) == {
        ("user.signup", "bob@example.com", "web"),
        ("session.start", "bob@example.com", "web"),
    }


def test_a_password_reset_is_recorded_through_the_web(app_client: TestClient, world: World) -> None:
    world.user("ana@example.com")
    submit(app_client, "/password/forgot", {"email": "ana@example.com"})
    secret = token_in(mails_to(world, "ana@example.com")[0], "/password/reset/")
    new = {"password": "brand-new-pass", "password_again": "brand-new-pass"}
    assert submit(app_client, f"/password/reset/{secret}", new).status_code == 303
    assert recorded(world) == {
        ("password.reset", "ana@example.com", "web"),
        ("session.start", "ana@example.com", "web"),
    }
    assert csrf_of(app_client.get("/settings/account").text)  # signed in by the reset
