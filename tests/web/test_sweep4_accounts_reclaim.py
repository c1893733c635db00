"""The pages of taking back an address a stranger signed up with: the reset form warns, the
flash says what was revoked, and every mail that reaches the mailbox says how."""

from __future__ import annotations

from fastapi.testclient import TestClient

from tests.services.test_account_links import mails_to, token_in
from tests.services.test_sweep4_accounts_reclaim import resets_to
from tests.support import World
from tests.web.support import PASSWORD, WebUser
from tests.web.test_accounts import browser, set_mode, signup_form, submit

OWNER = "bob@example.com"


def test_the_owner_of_the_mailbox_takes_the_account_back_through_the_reset_pages(
    app_client: TestClient, world: World
) -> None:
    """The forgot page mailed nothing to an unverified address and told its owner to ask an
    administrator: the stranger who signed up with it kept it, signed in."""
    set_mode(world, "open")
    assert submit(app_client, "/signup", signup_form(OWNER)).status_code == 303
    squatter = WebUser(app_client)
    verify = token_in(mails_to(world, OWNER)[0], "/account/verify/")
    with browser(world.rt) as owner:
        # The mailed link cannot confirm the stranger's account; it points to the reset.
        offered = owner.get(f"/account/verify/{verify}").text
        assert "Confirm my email" not in offered and 'href="/password/forgot"' in offered
        asked = submit(owner, "/password/forgot", {"email": OWNER})
        assert asked.status_code == 200 and "ask an administrator: an address" not in asked.text
        [letter] = resets_to(world, OWNER)
        secret = token_in(letter, "/password/reset/")
        path = f"/password/reset/{secret}"
        form = owner.get(path)
        assert form.status_code == 200 and "never confirmed" in form.text
        mismatch = submit(owner, path, {"password": "owners-pass", "password_again": "other"})
        assert mismatch.status_code == 422 and "never confirmed" in mismatch.text
        done = submit(owner, path, {"password": "owners-pass", "password_again": "owners-pass"})
        assert done.status_code == 303
        dashboard = owner.get("/").text
        assert "API tokens and run webhook are" in dashboard and "keep working" not in dashboard
        assert "not verified" not in owner.get("/settings/account").text
    assert squatter.get("/").status_code == 303  # signed out
    with browser(world.rt) as again:
        refused = submit(again, "/signin", {"email": OWNER, "password": PASSWORD})
        assert refused.status_code == 401
