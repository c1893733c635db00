"""Running a built-in model from the Evaluate tab: the live log, the breakdown, the leaderboard."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.support import FIRST_CHOICE, FIRST_CHOICE_ID, SHADES, Person, Site

pytestmark = pytest.mark.browser

# Records every value the live progress label and status take, with the status badge by the
# heading (text and class), in sessionStorage: the page reloads itself when the run ends, and
# the record must outlive that reload.
WATCH_PROGRESS = """() => {
  const box = document.querySelector('[data-events]');
  const badge = document.querySelector('h1 + .status');
  const seen = [];
  const note = () => {
    seen.push(box.querySelector('[data-progress-label]').textContent + ' '
      + box.querySelector('[data-status]').textContent + ' | ' + badge.textContent
      + ' (' + badge.className + ')');
    sessionStorage.setItem('seen', JSON.stringify(seen));
  };
  new MutationObserver(note).observe(box, {subtree: true, childList: true, characterData: true});
}"""


def test_run_a_built_in_model_watch_it_live_filter_and_rank_it(
    signed_in: Page, person: Person, site: Site
) -> None:
    page = signed_in
    benchmark_id = site.world.benchmark(person.id, SHADES)

    page.goto(f"/benchmarks/{benchmark_id}")
    page.get_by_role("navigation", name="Benchmark").get_by_role("link", name="Evaluate").click()
    page.get_by_label("Model").select_option(label=FIRST_CHOICE)
    page.get_by_role("button", name="See the estimate").click()
    expect(page.get_by_role("heading", name=f"Estimate for {FIRST_CHOICE}")).to_be_visible()
    page.get_by_role("button", name="Start the run").click()

    expect(page).to_have_url(re.compile(r"/runs/run_\w+$"))
    run_id = page.url.rsplit("/", 1)[1]
    expect(page.get_by_role("status")).to_have_text("Run queued.")
    live = page.locator("[data-events]")
    expect(live.locator("[data-progress-label]")).to_have_text("0%")
    page.evaluate(WATCH_PROGRESS)

    site.drain_jobs()
    # The `end` event reloads the page by itself: the finished view replaces the live one.
    expect(page.get_by_text("3 of 3 questions (100%)")).to_be_visible()
    expect(page.locator("h1 + .status")).to_have_text("completed")
    seen = page.evaluate("() => JSON.parse(sessionStorage.getItem('seen') || '[]')")
    # Before the reload, the badge followed the live status (it said "queued" all along once).
    assert "100% completed | completed (status status-completed)" in seen, seen

    page.get_by_label("Show", exact=True).select_option(label="Wrong")
    page.get_by_role("button", name="Filter").click()
    expect(page.get_by_text("1 question match.")).to_be_visible()
    rows = page.locator("table.breakdown tbody tr")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("Colour of the sky?")

    page.get_by_label("Show", exact=True).select_option(label="All questions")
    page.get_by_label("Tag", exact=True).select_option(label="land")
    page.get_by_role("button", name="Filter").click()
    expect(page.get_by_text("2 questions match.")).to_be_visible()
    expect(rows).to_have_count(2)

    page.get_by_role("button", name="Add to the leaderboard").click()
    expect(page.get_by_role("status")).to_have_text("The run is on the leaderboard.")
    page.goto(f"/benchmarks/{benchmark_id}/leaderboard")
    board = page.get_by_role("table")
    expect(board.get_by_role("link", name=FIRST_CHOICE)).to_have_attribute(
        "href", f"/runs/{run_id}"
    )
    expect(board.get_by_role("row").nth(1)).to_contain_text("66.7 %")


# How many lines each header cell of the questions table takes on screen.
HEADER_LINES = """() => [...document.querySelectorAll('table.breakdown th')].map((cell) => {
  const range = document.createRange();
  range.selectNodeContents(cell);
  const tops = new Set([...range.getClientRects()].map((rect) => Math.round(rect.top)));
  return [cell.textContent.trim(), tops.size];
})"""


def test_question_numbers_and_headers_stay_on_one_line_beside_long_questions(
    signed_in: Page, person: Person, site: Site
) -> None:
    # Long prompts take the table's width; the narrow columns must not wrap "12" as "1 / 2".
    long_words = " ".join(["a-rather-long-question-wording"] * 40)
    spec = {
        "title": "Long",
        "format": "mcq",
        "questions": [
            {"prompt": f"Question {n}: {long_words}", "choices": ["Yes", "No"], "answer": "A"}
            for n in range(12)
        ],
    }
    _, run_id = site.finished_run(person.id, spec, FIRST_CHOICE_ID)
    page = signed_in
    page.goto(f"/runs/{run_id}")
    expect(page.locator("table.breakdown tbody tr")).to_have_count(12)
    lines = page.evaluate(HEADER_LINES)
    assert ["12", 1] in lines and ["Expected", 1] in lines, lines
    assert [cell for cell in lines if cell[1] != 1] == [], lines


def test_the_compare_page_fits_a_phone(signed_in: Page, person: Person, site: Site) -> None:
    """Its run pickers, one long option each, laid the page out 790 px wide on a 375 px phone."""
    _, first = site.finished_run(person.id, SHADES, FIRST_CHOICE_ID)
    page = signed_in
    page.set_viewport_size({"width": 375, "height": 800})
    page.goto(f"/runs/compare?a={first}&b={first}")
    expect(page.locator("#compare-a")).to_be_visible()
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 375
