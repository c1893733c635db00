"""A refused form in the browser: the cursor is on the first field to put right."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.browser


def test_the_first_refused_field_has_the_focus(signed_in: Page) -> None:
    page = signed_in
    page.goto("/benchmarks/new")
    row = page.get_by_role("group", name="Question 1")
    row.get_by_label("Prompt").fill("Capital of Peru?")
    row.get_by_label("Accepted answers").fill("Lima")
    # Enter in a one-line field sends the form with its default button, Create.
    row.get_by_label("Tags").press("Enter")
    expect(page.get_by_text("Title: must not be empty")).to_be_visible()
    expect(page.get_by_label("Title")).to_be_focused()
    expect(row.get_by_label("Prompt")).to_have_value("Capital of Peru?")
