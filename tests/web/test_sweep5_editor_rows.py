"""The question editor's Remove buttons, as a crafted form may send them, and pasted CSV."""

from __future__ import annotations

import pytest
from bs4 import BeautifulSoup

from tests.web.support import WebUser

ROWS = {"format": "qa", "title": "Rows", "q0-prompt": "First?", "q1-prompt": "Second?"}


def _prompts(html: str) -> list[str]:
    soup = BeautifulSoup(html, "html.parser")
    return [area.get_text() for area in soup.select("textarea[id$=-prompt]")]


def test_remove_drops_that_row_and_focuses_the_one_in_its_place(signed_in: WebUser) -> None:
    """The editor had no way to remove a row."""
    page = signed_in.post("/benchmarks", {**ROWS, "action": "remove-0"})
    assert page.status_code == 200
    assert _prompts(page.text) == ["Second?"]
    focused = BeautifulSoup(page.text, "html.parser").select("[autofocus]")
    assert [field["id"] for field in focused] == ["q0-prompt"]


@pytest.mark.parametrize("action", ["remove-9", "remove-x", "remove--1", "remove-"])
def test_a_crafted_remove_changes_nothing(signed_in: WebUser, action: str) -> None:
    """A row number the form never showed must neither fail nor drop another row."""
    page = signed_in.post("/benchmarks", {**ROWS, "action": action})
    assert page.status_code == 200
    assert _prompts(page.text) == ["First?", "Second?"]


def test_removing_the_only_row_leaves_an_empty_one(signed_in: WebUser) -> None:
    page = signed_in.post("/benchmarks", {"format": "qa", "q0-prompt": "x", "action": "remove-0"})
    assert page.status_code == 200
    assert _prompts(page.text) == [""]


def test_pasted_csv_left_to_benchgen_is_read_as_csv(signed_in: WebUser) -> None:
    """Pasted CSV with the file type "From the name and first bytes" was read as JSONL and
    refused: "Line 1: not valid JSON"."""
    form = {"title": "Pasted", "file_format": "auto", "content": "prompt,answer\n2+2?,4\n"}
    created = signed_in.post("/benchmarks/import", form)
    assert created.status_code == 303, created.text[:2000]
