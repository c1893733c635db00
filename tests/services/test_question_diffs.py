"""The diff a question change shows: matched where that is cheap, by position past a bound."""

from __future__ import annotations

from typing import Any

import pytest

from benchgen.services.benchmarks import questions


def test_a_change_to_thousands_of_questions_is_compared_by_position_past_the_matching_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Matching two long lists takes time in the product of their lengths (10,000 questions
    edited every other one took 35 s inside the write): past the bound, by position."""
    real = questions.difflib.SequenceMatcher

    def bounded(a: list[Any], b: list[Any], autojunk: bool) -> Any:
        assert len(a) * len(b) <= 10**6, "an unbounded match"
        return real(a=a, b=b, autojunk=autojunk)

    monkeypatch.setattr(questions.difflib, "SequenceMatcher", bounded)
    old = [questions.Canonical(f"Q{n}?", (str(n),)) for n in range(1500)]
    new = [questions.Canonical(f"Q{n}?", (f"{n}!" if n % 2 else str(n),)) for n in range(1500)]
    new.append(questions.Canonical("Last?", ("x",)))
    diff = questions.diff_questions(old, new)
    assert [change["position"] for change in diff["changed"]] == list(range(1, 1500, 2))
    assert [item["position"] for item in diff["added"]] == [1500]
    assert (diff["removed"], diff["count_after"]) == ([], 1501)
    # A small change among them is still matched: one question inserted is one addition.
    inserted = [*old[:3], questions.Canonical("New?", ("y",)), *old[3:]]
    small = questions.diff_questions(old, inserted)
    assert ([a["position"] for a in small["added"]], small["changed"], small["removed"]) == (
        [3],
        [],
        [],
    )
