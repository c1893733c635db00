"""No page breaks its own Content-Security-Policy: no inline script, style or handler is refused.

Every browser test checks this for the pages it visits (the `page` fixture); this one visits the
pages with the most moving parts on purpose, and shows that the check can fail.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.support import (
    CREATE_MOONS,
    FIRST_CHOICE,
    FIRST_CHOICE_ID,
    SHADES,
    VIOLATION,
    Person,
    Site,
    say,
    start_conversation,
)

pytestmark = pytest.mark.browser

INLINE_SCRIPT = """() => {
  const script = document.createElement('script');
  script.textContent = 'window.inlineRan = true';
  document.body.appendChild(script);
}"""


def test_the_dashboard_a_run_and_a_chat_keep_to_the_policy(
    signed_in: Page, person: Person, site: Site, policy_violations: list[str]
) -> None:
    page = signed_in
    _, run_id = site.finished_run(person.id, SHADES, FIRST_CHOICE_ID)

    page.goto("/")
    expect(page.get_by_role("heading", level=1)).to_contain_text("Welcome")
    page.goto(f"/runs/{run_id}")
    expect(page.locator("canvas[data-chart]")).to_have_attribute("data-drawn", "1")
    start_conversation(page)
    say(page, CREATE_MOONS)
    expect(page.get_by_role("region", name="Proposal: Create a benchmark")).to_be_visible()
    assert policy_violations == []

    # The check itself: an inline script is refused, and the refusal is seen.
    with page.expect_console_message(lambda message: VIOLATION in message.text):
        page.evaluate(INLINE_SCRIPT)
    assert page.evaluate("() => window.inlineRan === undefined")
    assert len(policy_violations) == 1 and VIOLATION in policy_violations[0]
    policy_violations.clear()  # seen, and on purpose


def test_approve_decline_and_choose_in_the_chat_keep_to_the_policy(
    signed_in: Page, person: Person, site: Site, policy_violations: list[str], tmp_path: Path
) -> None:
    # Each button swaps the transcript in place. A screenshot (Playwright hides the caret with
    # an inline style, then leaves style="" behind; an extension or devtools can do the same)
    # before each press gives the old elements a style attribute: htmx must not copy it onto
    # the new ones when it settles the swap, which the policy refuses.
    page = signed_in
    site.world.benchmark(person.id, SHADES)
    site.world.benchmark(person.id, {**SHADES, "title": "Tints"})
    start_conversation(page)
    proposal = page.get_by_role("region", name=re.compile("^Proposal: "))

    say(page, f"run {FIRST_CHOICE} on Shades")
    page.screenshot(path=tmp_path / "proposal.png")
    proposal.get_by_role("button", name="Approve").click()
    expect(page.get_by_role("article").last).to_contain_text("[You pressed Approve]")
    expect(proposal).to_have_count(0)

    say(page, f"run {FIRST_CHOICE} on Tints")
    page.screenshot(path=tmp_path / "second.png")
    proposal.get_by_role("button", name="Decline").click()
    expect(page.get_by_role("article").last).to_contain_text("[You pressed Decline]")
    expect(proposal).to_have_count(0)

    say(page, f"run {FIRST_CHOICE}")
    page.screenshot(path=tmp_path / "choices.png")
    page.get_by_role("group", name="Choose one").get_by_role("button", name="Tints").click()
    expect(page.get_by_role("article").last).to_contain_text("[You chose]")
    expect(proposal).to_be_visible()
    assert policy_violations == []


def test_the_api_reference_draws_every_route_from_this_server_alone(
    page: Page, site: Site, policy_violations: list[str]
) -> None:
    """It was a blank page: Swagger UI came from a CDN with an inline script, both refused by
    the policy (and unreachable offline)."""
    elsewhere: list[str] = []
    page.on(
        "request",
        lambda request: (
            elsewhere.append(request.url) if not request.url.startswith(site.url) else None
        ),
    )
    page.goto("/api/docs")
    operations = page.locator(".opblock")
    expect(operations.first).to_be_visible()
    assert operations.count() >= 20
    expect(
        page.locator(".opblock-summary-path").filter(has_text="/api/v1/me").first
    ).to_be_visible()
    assert elsewhere == [] and policy_violations == []
