"""A custom benchmark in the browser: upload a Codabench bundle, read its pages, submit results,
see the scores in the bundle's own columns."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.bundle_factory import bundle, require_sandbox, results
from tests.e2e.support import Site

pytestmark = pytest.mark.browser


def test_upload_a_bundle_then_submit_results_and_see_the_columns(
    signed_in: Page, site: Site, tmp_path: Path
) -> None:
    require_sandbox()
    page = signed_in
    archive, answers = tmp_path / "tiny.zip", tmp_path / "answers.zip"
    archive.write_bytes(bundle())
    answers.write_bytes(results({"q1": "Paris", "q2": "4"}))

    page.get_by_role("link", name="New benchmark").click()
    page.get_by_role("link", name="Upload a Codabench bundle (.zip)").click()
    page.get_by_label("Bundle (.zip)").set_input_files(str(archive))
    page.get_by_role("button", name="Upload and check").click()

    expect(page).to_have_url(re.compile(r"/benchmarks/bm_\w+$"))
    expect(page.get_by_role("heading", level=1)).to_have_text("Tiny custom")
    expect(page.get_by_role("heading", name="Overview", level=2)).to_be_visible()
    expect(page.get_by_text("Answer the questions.")).to_be_visible()

    page.get_by_role("navigation", name="Benchmark").get_by_role("link", name="Evaluate").click()
    page.get_by_label("Submission (.zip)").set_input_files(str(answers))
    page.get_by_role("button", name="Submit").click()
    expect(page).to_have_url(re.compile(r"/runs/run_\w+$"))

    site.drain_jobs(timeout_s=60)
    # The `end` event reloads the page by itself (a reload of the test's own raced it, and
    # one of the two was aborted).
    expect(page.locator("h1 + .status")).to_have_text("completed")
    expect(page.get_by_text("Accuracy").first).to_be_visible()
    expect(page.get_by_text("Program output")).to_be_visible()
