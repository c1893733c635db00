"""A password change in a real browser: the session goes on under a new cookie, and a copy of
the old one is worth nothing."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Browser, Page, expect

from benchgen.web.session import SESSION_COOKIE
from tests.e2e.support import PASSWORD, VIEWPORT, Site

pytestmark = pytest.mark.browser
NEW_PASSWORD = "brand-new-pass"


def test_after_a_password_change_a_copied_cookie_no_longer_signs_in(
    signed_in: Page, browser: Browser, site: Site
) -> None:
    """The browser that changed the password kept its session id: whoever had copied its
    cookie (the usual reason to change a password) stayed signed in as the person."""
    page = signed_in
    (copied,) = [c for c in page.context.cookies() if c["name"] == SESSION_COOKIE]

    page.goto("/settings/account")
    page.get_by_label("Current password").fill(PASSWORD)
    page.get_by_label("New password", exact=True).fill(NEW_PASSWORD)
    page.get_by_label("New password again").fill(NEW_PASSWORD)
    page.get_by_role("button", name="Change password").click()
    expect(page.get_by_role("status")).to_contain_text("Your password is changed.")

    # Still signed in, and the page's forms carry the new session's token: the next form works.
    page.goto("/settings/tokens")
    page.get_by_label("Name").fill("after the change")
    page.get_by_role("button", name="Create the token").click()
    expect(page.locator("#new-token")).to_have_text(re.compile(r"^bgp_"))

    elsewhere = browser.new_context(base_url=site.url, viewport=VIEWPORT)
    try:
        elsewhere.add_cookies([copied])
        thief = elsewhere.new_page()
        thief.goto("/settings/account")
        expect(thief).to_have_url(re.compile(r"/signin\?next="))
    finally:
        elsewhere.close()
