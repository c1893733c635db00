"""Making a multiple-choice benchmark in the question editor."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.browser


def fill_question(page: Page, number: int, prompt: str, choices: list[str], answer: str) -> None:
    """Fill one of the editor's question rows (a fieldset "Question N")."""
    row = page.get_by_role("group", name=f"Question {number}")
    row.get_by_label("Prompt").fill(prompt)
    row.get_by_label("Choices, one per line").fill("\n".join(choices))
    row.get_by_label("Correct choice").fill(answer)


def test_create_a_multiple_choice_benchmark_in_the_editor(signed_in: Page) -> None:
    page = signed_in
    page.get_by_role("link", name="New benchmark").click()
    page.get_by_label("Title").fill("Planets")
    # The format tab keeps what was already typed.
    formats = page.get_by_role("navigation", name="Format")
    formats.get_by_role("button", name="Multiple choice").click()
    expect(page.get_by_label("Choices, one per line").first).to_be_visible()
    expect(page.get_by_label("Title")).to_have_value("Planets")
    fill_question(page, 1, "Largest planet?", ["Mars", "Jupiter", "Venus"], "B")
    fill_question(page, 2, "Closest to the Sun?", ["Mercury", "Earth"], "A")
    page.get_by_role("button", name="Add question").click()
    fill_question(page, 3, "The red planet?", ["Mars", "Saturn"], "A")
    page.get_by_role("group", name="Question 3").get_by_label("Tags").fill("colour, easy")
    page.get_by_role("button", name="Create benchmark").click()

    expect(page).to_have_url(re.compile(r"/benchmarks/bm_\w+$"))
    expect(page.get_by_role("status")).to_have_text("Created with 3 questions.")
    expect(page.get_by_role("heading", level=1)).to_have_text("Planets")
    expect(page.get_by_text("Multiple choice")).to_be_visible()

    page.get_by_role("navigation", name="Benchmark").get_by_role("link", name="Questions").click()
    expect(page.get_by_role("heading", name="Questions (3)")).to_be_visible()
    largest = page.get_by_role("listitem").filter(has_text="Largest planet?")
    expect(largest.get_by_role("listitem").filter(has_text="Jupiter")).to_contain_text("correct")
    expect(page.get_by_text("Tags: colour, easy")).to_be_visible()
