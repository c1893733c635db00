"""Each scoring method on examples: correct, wrong, no answer and error."""

from __future__ import annotations

import pytest

from benchgen.evals.scorers.choice import score_choice, score_choice_logprob
from benchgen.evals.scorers.exact import score_exact
from benchgen.evals.scorers.f1 import score_f1, token_f1
from benchgen.evals.scorers.numeric import parse_number, score_numeric
from benchgen.evals.scorers.regex import check_pattern, score_regex
from benchgen.evals.types import Answer, Key

CAPITAL = Key(("Paris", "Paris, France"))
MCQ = Key(("B",), ("red", "blue", "green", "yellow"))


def answer_with(logprobs: dict[str, float] | None) -> Answer:
    return Answer(0, "prompt", "B", None, 1, 1, 5, 1, letter_logprobs=logprobs)


@pytest.mark.parametrize(
    ("raw", "outcome", "extracted"),
    [
        ("I think...\nANSWER: **paris**", "correct", "paris"),
        ("ANSWER: The Paris.", "correct", "The Paris."),
        ("ANSWER: paris france", "correct", "paris france"),
        ("ANSWER: Lyon", "wrong", "Lyon"),
        ("Paris", "correct", "Paris"),
        ("   ", "no_answer", None),
        (None, "error", None),
    ],
)
def test_exact(raw: str | None, outcome: str, extracted: str | None) -> None:
    scored = score_exact(raw, CAPITAL, {})
    assert (scored.outcome, scored.extracted) == (outcome, extracted)
    assert scored.score == (1.0 if outcome == "correct" else 0.0)


@pytest.mark.parametrize(
    ("text", "readings"),
    [
        ("42", (42.0,)),
        ("-3.5", (-3.5,)),
        ("\u22127", (-7.0,)),
        ("+2", (2.0,)),
        ("1,234,567.5 apples", (1234567.5,)),
        ("3/4", (0.75,)),
        ("-1 / 2", (-0.5,)),
        ("50%", (0.5, 50.0)),
        ("1.5e3", (1500.0,)),
        (".5", (0.5,)),
        ("first 3 then 4", (4.0,)),
        ("$1,000", (1000.0,)),
        ("CO2", None),
        ("no digits", None),
        ("1/0", None),
        ("3/00", None),
        ("2/" + "5" * 5000, (0.0,)),
    ],
)
def test_parse_number(text: str, readings: tuple[float, ...] | None) -> None:
    assert parse_number(text) == readings


@pytest.mark.parametrize(
    ("raw", "answers", "options", "outcome"),
    [
        ("ANSWER: 1,000", ("1000",), {}, "correct"),
        ("ANSWER: 0.5", ("1/2",), {}, "correct"),
        ("ANSWER: 50%", ("0.5",), {}, "correct"),
        ("ANSWER: 50", ("50%",), {}, "correct"),
        ("ANSWER: 3.14", ("3.14159",), {}, "wrong"),
        ("ANSWER: 3.14", ("3.14159",), {"tolerance": 0.01}, "correct"),
        ("ANSWER: 101", ("100",), {"rel_tolerance": 0.02}, "correct"),
        ("ANSWER: 103", ("100",), {"rel_tolerance": 0.02, "tolerance": 0.5}, "wrong"),
        ("ANSWER: -5", ("5",), {}, "wrong"),
        ("ANSWER: about twelve", ("12",), {}, "no_answer"),
        ("ANSWER: 12", ("twelve",), {}, "error"),
        (None, ("12",), {}, "error"),
    ],
)
def test_numeric(
    raw: str | None, answers: tuple[str, ...], options: dict[str, float], outcome: str
) -> None:
    assert score_numeric(raw, Key(answers), options).outcome == outcome


@pytest.mark.parametrize(
    ("raw", "patterns", "options", "outcome"),
    [
        ("ANSWER: Paris", ("paris",), {}, "correct"),
        ("ANSWER: Paris.", ("paris",), {}, "correct"),
        ("ANSWER: Paris", ("paris",), {"case_insensitive": False}, "wrong"),
        ("ANSWER: the Eiffel Tower", (r"(?:the )?eiffel\s+tower",), {}, "correct"),
        ("ANSWER: Paris is nice", ("paris",), {}, "wrong"),  # fullmatch, not search
        ("ANSWER: 42", (r"4\d", "x"), {}, "correct"),
        ("ANSWER: aaaa", (r"(a+)+b",), {}, "error"),
        ("ANSWER: a", ("(",), {}, "error"),
        ("ANSWER: " + "a" * 2000, ("a*",), {}, "wrong"),
        ("", ("paris",), {}, "no_answer"),
        (None, ("paris",), {}, "error"),
    ],
)
def test_regex(
    raw: str | None, patterns: tuple[str, ...], options: dict[str, bool], outcome: str
) -> None:
    assert score_regex(raw, Key(patterns), options).outcome == outcome


@pytest.mark.parametrize(
    "pattern",
    [
        "(a+)+",
        "(a*)*b",
        "(a|aa)+",
        "((ab)*c)*",
        r"(\d{1,3})+",
        "(?:x+y?)*",
        "a" * 501,
        "[unclosed",
    ],
)
def test_check_pattern_refuses(pattern: str) -> None:
    with pytest.raises(ValueError):
        check_pattern(pattern)


@pytest.mark.parametrize(
    "pattern",
    [r"(?:the )?paris", r"\d+(?:\.0+)?", "(cat|dog)s?", r"[(+*]+", r"\(a+\)+", "(a)+", "x{2}"],
)
def test_check_pattern_accepts(pattern: str) -> None:
    check_pattern(pattern)


@pytest.mark.parametrize(
    ("prediction", "reference", "f1"),
    [
        ("the cat sat", "a cat sat", 1.0),
        ("cat", "cat sat", 2 * 1.0 * 0.5 / 1.5),
        # SQuAD's multiset definition: "cat cat" shares one "cat" with "cat sat".
        ("cat cat", "cat sat", 0.5),
        ("dog", "cat", 0.0),
        ("the", "a", 1.0),  # both empty after normalisation
        ("the", "cat", 0.0),
    ],
)
def test_token_f1(prediction: str, reference: str, f1: float) -> None:
    assert token_f1(prediction, reference) == pytest.approx(f1)


def test_f1_takes_the_best_accepted_answer_and_the_threshold() -> None:
    key = Key(("Barack Obama", "President Barack Hussein Obama"))
    scored = score_f1("ANSWER: Obama", key, {})
    assert scored.score == pytest.approx(2 / 3)
    assert scored.outcome == "correct"
    assert score_f1("ANSWER: Obama", key, {"threshold": 0.7}).outcome == "wrong"
    assert score_f1("ANSWER: ", key, {}).outcome == "no_answer"
    assert score_f1(None, key, {}).outcome == "error"


@pytest.mark.parametrize(
    ("raw", "outcome", "extracted"),
    [
        ("Blue, because...\nANSWER: **B**", "correct", "B"),
        ("ANSWER: (c)", "wrong", "C"),
        ("ANSWER: a dog", "no_answer", None),
        ("ANSWER: E", "no_answer", None),
        (None, "error", None),
    ],
)
def test_choice(raw: str | None, outcome: str, extracted: str | None) -> None:
    scored = score_choice(raw, MCQ, {})
    assert (scored.outcome, scored.extracted) == (outcome, extracted)


@pytest.mark.parametrize("key", [Key(("B",)), Key((), ("x", "y")), Key((" ",), ("x", "y"))])
def test_choice_with_a_broken_key_is_an_error(key: Key) -> None:
    assert score_choice("ANSWER: B", key, {}).outcome == "error"
    assert score_choice_logprob(answer_with({"B": -0.1}), key, {}).outcome == "error"


@pytest.mark.parametrize(
    ("logprobs", "outcome", "extracted"),
    [
        ({"A": -2.0, " B": -0.1, "C": -3.0}, "correct", "B"),
        ({"A": -0.2, "B": -1.0}, "wrong", "A"),
        # "E" is beyond the four choices and "AB" is no letter: both are ignored.
        ({"E": -0.01, "AB": -0.02, "b": -0.5, "D": -0.9}, "correct", "B"),
        ({"E": -0.01}, "no_answer", None),
        (None, "no_answer", None),
    ],
)
def test_choice_logprob(
    logprobs: dict[str, float] | None, outcome: str, extracted: str | None
) -> None:
    scored = score_choice_logprob(answer_with(logprobs), MCQ, {})
    assert (scored.outcome, scored.extracted) == (outcome, extracted)
