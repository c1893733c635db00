"""The journey of a keyboard and screen-reader user: where the focus goes after each action, and
what is read out when the page changes without a reload."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from benchgen.core.context import Principal
from benchgen.services.runs import launch
from tests.e2e.support import (
    CREATE_MOONS,
    FIRST_CHOICE,
    FIRST_CHOICE_ID,
    SHADES,
    Person,
    Site,
    start_conversation,
)

pytestmark = pytest.mark.browser

FOCUSED_ID = "document.activeElement.id"


def test_add_question_puts_the_focus_in_the_new_row(signed_in: Page) -> None:
    """The editor came back from "Add question" with the focus on nothing: a keyboard user started
    again at "Skip to content" and tabbed through every row to reach the one asked for."""
    page = signed_in
    page.goto("/benchmarks/new")
    page.get_by_role("button", name="Add question").focus()
    page.keyboard.press("Enter")

    expect(page.get_by_role("group", name="Question 3")).to_be_visible()
    assert page.evaluate(FOCUSED_ID) == "q2-prompt"
    page.keyboard.type("Typed where the focus went")
    expect(page.get_by_role("group", name="Question 3").get_by_label("Prompt")).to_have_value(
        "Typed where the focus went"
    )


def test_a_question_row_can_be_removed_by_keyboard(signed_in: Page) -> None:
    """The editor could add rows but never remove one: a row typed by mistake stayed, and was
    created with the rest unless emptied field by field."""
    page = signed_in
    page.goto("/benchmarks/new")
    first = page.get_by_role("group", name="Question 1")
    first.get_by_label("Prompt").fill("A mistake")
    page.get_by_role("group", name="Question 2").get_by_label("Prompt").fill("Keep me")
    page.get_by_role("button", name="Remove question 1").focus()
    page.keyboard.press("Space")

    expect(page.get_by_role("group", name="Question 2")).to_have_count(0)
    expect(first.get_by_label("Prompt")).to_have_value("Keep me")
    # The focus goes to the row that took the removed one's place.
    assert page.evaluate(FOCUSED_ID) == "q0-prompt"


def test_a_new_conversation_puts_the_focus_in_the_message_box(signed_in: Page) -> None:
    """A new conversation opened with nothing to read and the focus on nothing: a keyboard user
    tabbed through the whole menu to reach the message box."""
    page = signed_in
    start_conversation(page)
    expect(page.get_by_label("Message to the agent")).to_be_focused()


def test_sending_a_message_keeps_the_focus_in_the_message_box(signed_in: Page) -> None:
    """After Send the form was swapped for a new one and the focus fell to the page's body: the
    next Tab started again at the top of the page, and the reply was never read out."""
    page = signed_in
    start_conversation(page)
    page.get_by_label("Message to the agent").fill(CREATE_MOONS)
    page.get_by_role("button", name="Send").focus()
    page.keyboard.press("Enter")

    expect(page.get_by_role("button", name="Approve")).to_be_visible()
    expect(page.locator("#agent-news")).to_contain_text("The agent replied: Here is exactly")
    expect(page.locator("#agent-news")).to_contain_text("It waits for your answer")
    assert page.evaluate(FOCUSED_ID) == "message-text"


def test_approving_by_keyboard_moves_the_focus_to_what_came_of_it(signed_in: Page) -> None:
    """Approve's card was swapped away with the focus on it, which fell to the page's body."""
    page = signed_in
    start_conversation(page)
    page.get_by_label("Message to the agent").fill(CREATE_MOONS)
    page.get_by_role("button", name="Send").click()
    page.get_by_role("button", name="Approve").focus()
    page.keyboard.press("Enter")

    expect(page.get_by_role("button", name="Approve")).to_have_count(0)
    latest = page.get_by_role("article").last
    expect(latest).to_contain_text("Created benchmark")
    expect(latest).to_be_focused()
    expect(page.locator("#agent-news")).to_contain_text("The agent replied: Created benchmark")


def test_pasted_csv_is_imported_and_its_problem_is_at_the_paste_box(signed_in: Page) -> None:
    """Pasted CSV, with the file type left to BenchGen, was read as JSONL ("Line 1: not valid
    JSON"), and the problem was tied to the empty file field, where the focus went."""
    page = signed_in
    page.goto("/benchmarks/import")
    page.get_by_label("Title").fill("Pasted CSV")
    pasted = page.get_by_label("Or paste a JSONL or CSV file's content")
    pasted.fill("prompt,answer\nCapital of Peru?,Lima,extra\n")
    page.get_by_role("button", name="Import").press("Enter")

    expect(page.get_by_role("alert")).to_contain_text("Pasted content, line 2: more cells")
    expect(pasted).to_be_focused()
    expect(pasted).to_have_accessible_description(re.compile("more cells than"))
    pasted.fill("prompt,answer\nCapital of Peru?,Lima\n")
    page.get_by_role("button", name="Import").press("Enter")
    expect(page.get_by_role("status")).to_have_text("Created with 1 question.")


def test_the_estimate_and_a_new_token_take_the_focus(
    signed_in: Page, site: Site, person: Person
) -> None:
    """The estimate (with its Start button) and a token shown once appeared with the focus on
    nothing: a screen reader did not read them, and Tab started again at the top of the page."""
    page = signed_in
    benchmark_id = site.world.benchmark(person.id, SHADES)
    page.goto(f"/benchmarks/{benchmark_id}/evaluate")
    page.get_by_label("Model").select_option(FIRST_CHOICE_ID)
    page.get_by_role("button", name="See the estimate").press("Enter")
    expect(page.get_by_role("region", name=f"Estimate for {FIRST_CHOICE}")).to_be_focused()
    page.keyboard.press("Tab")
    expect(page.get_by_role("button", name="Start the run")).to_be_focused()

    page.goto("/settings/tokens")
    page.get_by_label("Name").fill("laptop")
    page.get_by_role("button", name="Create the token").press("Enter")
    expect(page.get_by_role("status").filter(has_text="Your new token")).to_be_focused()


def test_a_refused_sign_in_is_read_with_the_field_that_has_the_focus(page: Page) -> None:
    """The refusal was an alert shown with the page, tied to no field: the focus went to Email
    and a screen reader read only "Email", never why the sign-in failed."""
    page.goto("/signin")
    page.get_by_label("Email").fill("nobody@example.com")
    page.get_by_label("Password").fill("not the password")
    page.get_by_label("Password").press("Enter")

    email = page.get_by_label("Email")
    expect(email).to_be_focused()
    expect(email).to_have_accessible_description("Wrong email or password.")
    expect(page.get_by_label("Password")).to_have_accessible_description("Wrong email or password.")
    expect(email).to_have_attribute("aria-invalid", "true")


def test_a_live_run_says_its_status_in_a_live_region(
    signed_in: Page, site: Site, person: Person
) -> None:
    """The live page changed its status (queued, running, completed) in plain text: a screen
    reader said nothing until the page reloaded at the end."""
    page = signed_in
    benchmark_id = site.world.benchmark(person.id, SHADES)
    principal = Principal.web(person.id)
    run = site.world.do(principal, launch.start_run, benchmark_id, FIRST_CHOICE_ID)
    page.goto(f"/runs/{run.id}")

    status = page.locator("[data-events] [data-status]")
    expect(status).to_have_text("queued")
    expect(status).to_have_attribute("aria-live", "polite")
