"""Making a multiple-choice benchmark in the question editor."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from benchgen.services.accounts import users
from tests.e2e.support import PASSWORD, SHADES, Site, sign_in
from tests.support import OPERATOR

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


def test_enter_in_a_field_creates_the_draft_in_its_format(signed_in: Page) -> None:
    page = signed_in
    page.goto("/benchmarks/new?format=mcq")
    page.get_by_label("Title").fill("Keyboard quiz")
    fill_question(page, 1, "Capital of France?", ["Paris", "Lyon"], "A")
    # Enter presses the form's default button: "Create", never a format tab.
    page.get_by_label("Title").press("Enter")

    expect(page).to_have_url(re.compile(r"/benchmarks/bm_\w+$"))
    expect(page.get_by_role("status")).to_have_text("Created with 1 question.")
    expect(page.get_by_text("Multiple choice")).to_be_visible()


def test_long_unbroken_text_wraps_and_sign_out_stays_in_view(page: Page, site: Site) -> None:
    email = "long-words@example.com"
    user_id = site.world.do(OPERATOR, users.create_user, email, PASSWORD, "C" * 200).id
    long = {**SHADES, "title": "T" * 200, "description": "D" * 3000}
    long["questions"] = [{**SHADES["questions"][0], "prompt": "P" * 3000}]
    bm = site.world.benchmark(user_id, long)
    sign_in(page, email)
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 800})
        for path in ("/", f"/benchmarks/{bm}", f"/benchmarks/{bm}/questions"):
            page.goto(path)
            wide = page.evaluate("document.documentElement.scrollWidth")
            assert wide <= width, (path, width, wide)
            box = page.get_by_role("button", name="Sign out").bounding_box()
            assert box is not None and box["x"] + box["width"] <= width, (path, width, box)
