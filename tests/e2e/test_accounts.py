"""Signing in, and an API token made in the browser, used from outside it with curl."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.support import Person, Site, sign_in

pytestmark = pytest.mark.browser


def test_a_person_signs_in_and_lands_on_the_dashboard(page: Page, person: Person) -> None:
    page.goto("/")
    expect(page).to_have_url(re.compile(r"/signin\?next=(%2F|/)$"))
    page.get_by_label("Email").fill(person.email)
    page.get_by_label("Password").fill("not the password")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("alert")).to_have_text("Wrong email or password.")

    sign_in(page, person.email)
    expect(page.get_by_role("heading", level=1)).to_contain_text("Welcome")
    expect(page.get_by_role("navigation", name="Main")).to_be_visible()


def test_a_token_is_shown_once_and_works_from_curl(
    signed_in: Page, person: Person, site: Site
) -> None:
    page = signed_in
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Settings").click()
    page.get_by_role("link", name="API tokens").click()
    page.get_by_label("Name").fill("laptop scripts")
    expect(page.get_by_role("checkbox", name="read")).to_be_checked()
    page.get_by_role("button", name="Create the token").click()

    shown = page.get_by_role("status").filter(has_text="Your new token").locator("code.secret")
    secret = shown.inner_text().strip()
    assert re.fullmatch(r"bgp_[0-9A-Za-z]{38}", secret), secret
    expect(page.get_by_role("button", name="Copy")).to_be_visible()
    status, body = curl(f"{site.url}/api/v1/me", secret)
    assert status == 200, body
    assert json.loads(body)["email"] == person.email

    # Reloading must neither show the secret again nor make a second token.
    page.reload()
    expect(page.get_by_text(secret)).to_have_count(0)
    expect(page.locator("code.secret")).to_have_count(0)
    listed = page.get_by_role("row").filter(has_text="laptop scripts")
    expect(listed).to_have_count(1)
    expect(listed).to_contain_text(f"…{secret[-4:]}")
    expect(listed).to_contain_text("active")


def curl(url: str, token: str) -> tuple[int, str]:
    """GET `url` with curl and the token as a bearer: (status, body)."""
    program = shutil.which("curl")
    assert program, "these tests use curl, as the issue's flow does"
    done = subprocess.run(  # noqa: S603 - a fixed program and arguments, no shell
        [program, "-sS", "-H", f"Authorization: Bearer {token}", "-w", "\n%{http_code}", url],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    body, _, code = done.stdout.rpartition("\n")
    return int(code), body
