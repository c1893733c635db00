"""The new-benchmark form names an empty title and every bad question in one reply."""

from __future__ import annotations

from bs4 import BeautifulSoup

from tests.web.benchmark_site import Site, site

__all__ = ["site"]  # the module-scoped fixture


def test_an_empty_title_and_a_bad_question_are_both_named(site: Site) -> None:
    form = {
        "format": "mcq",
        "title": " ",
        "q0-prompt": "Pick",
        "q0-choices": "x\ny",
        "q0-answer": "Q",
        "action": "create",
    }
    refused = site.ana.post("/benchmarks", form)
    assert refused.status_code == 422
    soup = BeautifulSoup(refused.text, "html.parser")
    for field in ("title", "q0-answer"):
        assert soup.find("p", id=f"{field}-error") is not None, field
