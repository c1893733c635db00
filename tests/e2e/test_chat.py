"""The chat: a benchmark proposed, previewed and approved; a delete refused with a link to the
page where the person deletes it themselves."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.support import CREATE_MOONS, say, start_conversation

pytestmark = pytest.mark.browser


def test_approve_a_proposed_benchmark_then_delete_it_where_the_agent_points(
    signed_in: Page,
) -> None:
    page = signed_in
    start_conversation(page)
    conversation = page.url
    say(page, CREATE_MOONS)
    card = page.get_by_role("region", name="Proposal: Create a benchmark")
    expect(card).to_contain_text("Moons")
    expect(card).to_contain_text("Moon of Earth?")
    card.get_by_role("button", name="Approve").click()
    expect(page.get_by_role("article").last).to_contain_text("Created benchmark")
    expect(card).to_have_count(0)

    page.get_by_role("navigation", name="Main").get_by_role("link", name="Benchmarks").click()
    link = page.get_by_role("link", name="Moons", exact=True)
    expect(link).to_be_visible()
    benchmark_path = link.get_attribute("href")
    assert benchmark_path is not None

    page.goto(conversation)
    say(page, "delete my benchmark Moons")
    reply = page.get_by_role("article").last
    expect(reply).to_contain_text("can't delete a benchmark")
    reply.get_by_role("link", name=re.compile(r"settings$")).click()
    expect(page).to_have_url(re.compile(re.escape(f"{benchmark_path}/settings") + "$"))

    danger = page.get_by_role("region", name="Delete this benchmark")
    delete = danger.get_by_role("button", name="Delete the benchmark")
    expect(delete).to_be_disabled()
    danger.get_by_label(re.compile("to confirm")).fill("Moons")
    expect(delete).to_be_enabled()
    delete.click()

    expect(page.get_by_role("status")).to_have_text("Deleted “Moons”.")
    expect(page.get_by_role("heading", level=1)).to_have_text("Benchmarks")
    expect(page.get_by_role("link", name="Moons", exact=True)).to_have_count(0)


def test_a_message_sent_after_the_session_ended_says_so_and_keeps_the_text(
    signed_in: Page,
) -> None:
    """htmx drops a refused answer: Send did nothing at all, however often it was pressed."""
    page = signed_in
    start_conversation(page)
    session = page.context.cookies()
    page.context.clear_cookies()  # signed out elsewhere: the session is gone
    page.get_by_label("Message to the agent").fill("list my benchmarks")
    page.get_by_role("button", name="Send").click()
    failed = page.locator("[data-request-failed]")
    expect(failed).to_contain_text("your session may have ended")
    expect(page.get_by_label("Message to the agent")).to_have_value("list my benchmarks")
    # Back in session, the message goes through, and the note of the failure goes away.
    page.context.add_cookies(session)  # type: ignore[arg-type]
    say(page, "list my benchmarks")
    expect(failed).to_have_count(0)
