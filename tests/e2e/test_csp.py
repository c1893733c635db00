"""No page breaks its own Content-Security-Policy: no inline script, style or handler is refused.

Every browser test checks this for the pages it visits (the `page` fixture); this one visits the
pages with the most moving parts on purpose, and shows that the check can fail.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.support import (
    CREATE_MOONS,
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
