"""Fixtures for browser tests: one live server and one Chromium for the package, a fresh browser
context (own cookies) per test, and a screenshot of the page when a test fails.

Scope is the package, not the session: while Playwright's sync API is open it marks an event
loop as running in this thread, so `asyncio.run` (async tests, the evaluation engine) would fail
in tests after these. Chromium is Debian's `/usr/bin/chromium` (`playwright install` is never
run); without it these tests skip, except under `CI=true`, where that is a failure.
"""

from __future__ import annotations

import os
import re
from collections.abc import Generator, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from tests.e2e.support import (
    CHROMIUM,
    LAUNCH_ARGS,
    VIEWPORT,
    Person,
    Site,
    served_site,
    sign_in,
    watch_console,
)

IN_CI = os.environ.get("CI", "").lower() == "true"


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """On a failed test, save what the browser showed and name the file in the report."""
    report = yield
    page = getattr(item, "funcargs", {}).get("page")
    tmp_path = getattr(item, "funcargs", {}).get("tmp_path")
    if report.when == "call" and report.failed and page is not None and tmp_path is not None:
        shot = Path(tmp_path) / "failure.png"
        try:
            page.screenshot(path=str(shot), full_page=True)
            note = f"{shot} (page {page.url})"
        except Exception as exc:  # a crashed page must not hide the test's own failure
            note = f"no screenshot: {exc}"
        report.sections.append(("failure screenshot", note))
    return report


@pytest.fixture(scope="package")
def site(tmp_path_factory: pytest.TempPathFactory, sqlite_template: Path) -> Iterator[Site]:
    """BenchGen served by uvicorn on 127.0.0.1, on its own SQLite database."""
    with served_site(tmp_path_factory.mktemp("e2e") / "data", sqlite_template) as served:
        yield served


@pytest.fixture(scope="package")
def browser() -> Iterator[Browser]:
    """Headless Chromium, shared by the package's tests."""
    if not CHROMIUM.exists():
        reason = f"{CHROMIUM} is missing (apt-get install chromium)"
        if IN_CI:
            pytest.fail(f"CI=true requires Chromium: {reason}")
        pytest.skip(reason)
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=LAUNCH_ARGS
        )
        yield launched
        launched.close()


@pytest.fixture
def policy_violations() -> list[str]:
    """What the page's console reported against the Content-Security-Policy, and uncaught
    script errors: every browser test fails when it ends with any."""
    return []


@pytest.fixture
def page(
    browser: Browser, site: Site, tmp_path: Path, policy_violations: list[str]
) -> Iterator[Page]:
    """A page in a fresh browser context (no cookies), addressed relative to the site."""
    context = browser.new_context(base_url=site.url, viewport=VIEWPORT)
    context.set_default_timeout(10_000)
    try:
        opened = context.new_page()
        watch_console(opened, policy_violations)
        yield opened
    finally:
        context.close()
    broken = "\n".join(policy_violations)
    assert not policy_violations, (
        f"the pages broke their Content-Security-Policy or threw:\n{broken}"
    )


@pytest.fixture
def person(site: Site, request: pytest.FixtureRequest) -> Person:
    """A user of this test alone, with 1000 credits (password: tests.support's)."""
    name = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower()).strip("-")[:50]
    email = f"{name}@example.com"
    return Person(site.world.user(email, credits_=1000), email)


@pytest.fixture
def signed_in(page: Page, person: Person) -> Page:
    """The page, signed in as `person` through the sign-in form."""
    sign_in(page, person.email)
    return page
