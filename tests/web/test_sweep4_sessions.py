"""Sessions against a stranger who holds a copy of this browser's cookie."""

from __future__ import annotations

from fastapi.testclient import TestClient

from benchgen.app import create_app
from benchgen.services.runtime import Runtime
from benchgen.web.session import SESSION_COOKIE
from tests.web.support import PASSWORD, WebUser, csrf_of

NEW_PASSWORD = "brand-new-pass"


def test_a_password_change_gives_this_browser_a_new_session_id(
    signed_in: WebUser, runtime: Runtime
) -> None:
    """A stolen cookie is why people change their password, yet the session of the browser
    that changed it went on under the same id: the thief's copy of the cookie (and the CSRF
    token it had read) kept working after "every other session is signed out"."""
    stolen = signed_in.client.cookies[SESSION_COOKIE]
    old_csrf = signed_in.csrf
    form = {"current_password": PASSWORD, "new_password": NEW_PASSWORD}
    done = signed_in.post(
        "/settings/account/password", {**form, "new_password_again": NEW_PASSWORD}
    )
    assert done.status_code == 303 and done.headers["location"] == "/settings/account"
    fresh = done.cookies.get(SESSION_COOKIE)
    assert fresh and fresh != stolen

    # The person stays signed in, with a new CSRF token, and is told what happened.
    page = signed_in.page("/settings/account")
    assert "Your password is changed." in page.text
    # Tokens are not sessions: the person is told they still work, and where to revoke them.
    assert "API tokens keep working" in page.text
    assert csrf_of(str(page)) != old_csrf

    with TestClient(create_app(runtime.settings, runtime), follow_redirects=False) as thief:
        thief.cookies.set(SESSION_COOKIE, stolen)
        assert thief.get("/settings/account").headers["location"].startswith("/signin")
