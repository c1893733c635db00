"""Wilson intervals against known values, and the run summary's arithmetic."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchgen.evals.aggregate import Tally, summarize, wilson_interval
from benchgen.evals.types import Scored


@pytest.mark.parametrize(
    ("k", "n", "low", "high"),
    [
        (8, 10, 0.4902, 0.9433),
        (0, 10, 0.0, 0.2775),
        (10, 10, 0.7225, 1.0),
        (50, 100, 0.4038, 0.5962),
        (1, 1, 0.2065, 1.0),
    ],
)
def test_wilson_interval_known_values(k: int, n: int, low: float, high: float) -> None:
    assert wilson_interval(k, n) == pytest.approx((low, high), abs=1e-4)


@pytest.mark.parametrize(("k", "n"), [(0, 0), (-1, 5), (6, 5)])
def test_wilson_interval_refuses_impossible_counts(k: int, n: int) -> None:
    with pytest.raises(ValueError):
        wilson_interval(k, n)


def verdict(outcome: str, score: float | None = None) -> Scored:
    value = score if score is not None else float(outcome == "correct")
    return Scored(outcome, value, None)  # type: ignore[arg-type]


def test_summary_counts_errors_and_no_answers_as_not_correct() -> None:
    scored = [
        verdict("correct"),
        verdict("correct"),
        verdict("wrong", 0.4),
        verdict("no_answer"),
        verdict("error"),
    ]
    tags = [("easy", "geo"), ("geo",), ("easy",), (), ("geo", "geo")]
    summary = summarize(scored, tags)
    low, high = wilson_interval(2, 5)
    assert summary == {
        "n": 5,
        "correct": 2,
        "accuracy": 0.4,
        "ci_low": low,
        "ci_high": high,
        "no_answer": 1,
        "no_answer_rate": 0.2,
        "errors": 1,
        "mean_score": pytest.approx(2.4 / 5),
        "per_tag": {
            "easy": {"n": 2, "correct": 1, "accuracy": 0.5, **_ci(1, 2)},
            "geo": {"n": 3, "correct": 2, "accuracy": 2 / 3, **_ci(2, 3)},
        },
    }
    assert list(summary["per_tag"]) == ["easy", "geo"]


def _ci(k: int, n: int) -> dict[str, float]:
    low, high = wilson_interval(k, n)
    return {"ci_low": low, "ci_high": high}


def test_an_empty_summary_has_no_rates() -> None:
    assert summarize([], []) == {
        "n": 0,
        "correct": 0,
        "accuracy": None,
        "ci_low": None,
        "ci_high": None,
        "no_answer": 0,
        "no_answer_rate": None,
        "errors": 0,
        "mean_score": None,
        "per_tag": {},
    }


def test_scored_and_tags_must_line_up() -> None:
    with pytest.raises(ValueError):
        summarize([verdict("correct")], [])


_OUTCOMES = st.sampled_from(["correct", "wrong", "no_answer", "error"])
_TAGS = st.lists(st.sampled_from(["a", "b", "c"]), max_size=3)


@given(st.lists(st.tuples(_OUTCOMES, st.floats(0, 1), _TAGS), max_size=30))
def test_a_tally_of_stored_tag_texts_matches_summarize(
    answers: list[tuple[str, float, list[str]]],
) -> None:
    """Rescoring tallies answers one by one, with each question's tags as stored JSON text."""
    scored = [Scored(outcome, score, None) for outcome, score, _ in answers]  # type: ignore[arg-type]
    tally: Tally[str] = Tally()
    for verdict_, (_, _, tags) in zip(scored, answers, strict=True):
        tally.add(verdict_, json.dumps(tags))
    expected = summarize(scored, [tuple(tags) for _, _, tags in answers])
    assert tally.summary(json.loads) == expected


@given(st.lists(st.tuples(_OUTCOMES, st.floats(0, 1), _TAGS), max_size=30), st.integers(0, 30))
def test_adding_all_at_once_counts_as_adding_one_by_one(
    answers: list[tuple[str, float, list[str]]], split: int
) -> None:
    """Rescoring adds a chunk's verdicts at once; two chunks must give what one by one gives."""
    scored = [Scored(outcome, score, None) for outcome, score, _ in answers]  # type: ignore[arg-type]
    tags = [json.dumps(tags) for _, _, tags in answers]
    one_by_one: Tally[str] = Tally()
    for verdict_, stand_in in zip(scored, tags, strict=True):
        one_by_one.add(verdict_, stand_in)
    at_once: Tally[str] = Tally()
    at_once.add_all(scored[:split], tags[:split])
    at_once.add_all(scored[split:], tags[split:])
    assert vars(at_once) == vars(one_by_one)
