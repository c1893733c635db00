"""validate_scoring's checks and messages, and score's dispatch."""

from __future__ import annotations

from typing import Any

import pytest

from benchgen.evals.scorers.registry import DEFAULT_METHOD, SCORERS, score, validate_scoring
from benchgen.evals.types import Answer, Key


def answer(raw: str | None, error: str | None = None) -> Answer:
    return Answer(0, "prompt", raw, error, 0, 0, 0, 1)


def test_defaults_are_filled_in() -> None:
    steps = {
        "nfkc": True,
        "case": True,
        "punctuation": True,
        "articles": True,
        "whitespace": True,
        "number_words": False,
    }
    assert validate_scoring("qa", {}) == {"method": "exact", "options": steps}
    assert validate_scoring("qa", {"method": "includes", "options": {"number_words": True}}) == {
        "method": "includes",
        "options": {**steps, "number_words": True},
    }
    assert validate_scoring("mcq", {"options": None}) == {"method": "choice", "options": {}}
    assert validate_scoring("qa", {"method": "f1"}) == {
        "method": "f1",
        "options": {"threshold": 0.5},
    }
    assert validate_scoring("qa", {"method": "numeric", "options": {"tolerance": 1}}) == {
        "method": "numeric",
        "options": {"tolerance": 1.0, "rel_tolerance": 0.0},
    }
    assert validate_scoring("qa", {"method": "regex"})["options"] == {"case_insensitive": True}
    assert validate_scoring("qa", {"method": "judge"}) == {"method": "judge", "options": {}}


def test_every_default_method_is_registered_for_its_format() -> None:
    for fmt, name in DEFAULT_METHOD.items():
        assert fmt in SCORERS[name].formats


@pytest.mark.parametrize(
    ("fmt", "settings", "field"),
    [
        ("essay", {}, "format:"),
        ("qa", {"method": "fuzzy"}, "method: unknown scoring method 'fuzzy'"),
        ("qa", {"method": 3}, "method: unknown scoring method 3"),
        ("qa", {"method": "choice"}, "method: 'choice' does not apply to qa"),
        ("mcq", {"method": "exact"}, "method: 'exact' does not apply to mcq"),
        ("mcq", {"method": "judge"}, "method: 'judge' does not apply to mcq"),
        ("qa", {"mehtod": "exact"}, "scoring: unknown field(s) ['mehtod']"),
        ("qa", {"options": []}, "options: expected an object"),
        ("qa", {"options": {"threshold": 0.5}}, "options: ['threshold'] not known for 'exact'"),
        ("qa", {"method": "numeric", "options": {"tolerence": 1}}, "['tolerence'] not known"),
        ("qa", {"method": "numeric", "options": {"tolerance": -1}}, "options.tolerance: must be"),
        ("qa", {"method": "numeric", "options": {"tolerance": "1"}}, "options.tolerance: expected"),
        ("qa", {"method": "numeric", "options": {"tolerance": True}}, "options.tolerance:"),
        ("qa", {"method": "numeric", "options": {"rel_tolerance": float("nan")}}, "rel_tolerance"),
        ("qa", {"method": "numeric", "options": {"rel_tolerance": 2}}, "rel_tolerance: must be"),
        ("qa", {"method": "f1", "options": {"threshold": 1.5}}, "options.threshold: must be"),
        ("qa", {"method": "regex", "options": {"case_insensitive": 1}}, "case_insensitive"),
    ],
)
def test_bad_settings_name_the_field(fmt: str, settings: dict[str, Any], field: str) -> None:
    with pytest.raises(ValueError) as raised:
        validate_scoring(fmt, settings)
    assert field in str(raised.value)


def test_settings_that_are_not_an_object_are_refused() -> None:
    with pytest.raises(ValueError, match="scoring: expected an object"):
        validate_scoring("qa", ["exact"])  # type: ignore[arg-type]


def test_score_dispatches_by_method() -> None:
    key = Key(("12",))
    numeric = validate_scoring("qa", {"method": "numeric"})
    assert score(answer("ANSWER: 12.0"), key, numeric).outcome == "correct"
    assert score(answer("ANSWER: 12.0"), key, validate_scoring("qa", {})).outcome == "wrong"
    mcq = Key(("A",), ("x", "y"))
    assert score(answer("ANSWER: A"), mcq, validate_scoring("mcq", {})).outcome == "correct"
    logprob = Answer(0, "p", "", None, 0, 0, 0, 1, letter_logprobs={"A": -0.1, "B": -2.0})
    settings = validate_scoring("mcq", {"method": "choice_logprob"})
    assert score(logprob, mcq, settings).extracted == "A"


def test_an_engine_error_scores_error_whatever_the_method() -> None:
    for name in SCORERS:
        scored = score(answer(None, "timed out"), Key(("A",), ("x", "y")), {"method": name})
        assert (scored.outcome, scored.reasoning) == ("error", "timed out")


def test_score_refuses_the_judge_and_unknown_methods() -> None:
    with pytest.raises(ValueError, match="judge_answer"):
        score(answer("x"), Key(("x",)), {"method": "judge"})
    with pytest.raises(ValueError, match="unknown scoring method"):
        score(answer("x"), Key(("x",)), {"method": "nope"})
