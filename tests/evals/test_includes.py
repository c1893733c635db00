"""The `includes` method and the switchable normalisation steps of exact and includes."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchgen.evals.scorers.normalize import DEFAULT_STEPS, Steps, normalize_text, normalize_with
from benchgen.evals.scorers.registry import score, validate_scoring
from benchgen.evals.types import Answer, Key


def _verdict(
    reply: str, answers: tuple[str, ...], method: str = "includes", **options: bool
) -> str:
    settings = validate_scoring("qa", {"method": method, "options": options})
    return score(Answer(0, "p", reply, None, 0, 0, 0, 1), Key(answers), settings).outcome


@pytest.mark.parametrize(
    ("reply", "answers", "outcome"),
    [
        ("The capital of Australia is Canberra.", ("Canberra",), "correct"),
        ("I think it is canberra", ("Canberra",), "correct"),
        ("ANSWER: The answer is New York City", ("new york",), "correct"),
        ("Sydney is the largest city.", ("Canberra",), "wrong"),
        ("It was 14.", ("4",), "wrong"),  # whole words only
        ("Romeo and Juliet", ("Rome",), "wrong"),
        ("Brasilia, of course", ("Brasília", "Brasilia"), "correct"),
        ("ANSWER:", ("x",), "no_answer"),
    ],
)
def test_includes_finds_whole_words_or_phrases(
    reply: str, answers: tuple[str, ...], outcome: str
) -> None:
    assert _verdict(reply, answers) == outcome


def test_exact_still_needs_the_whole_answer() -> None:
    assert _verdict("The capital of Australia is Canberra.", ("Canberra",), "exact") == "wrong"
    assert _verdict("ANSWER: canberra", ("Canberra",), "exact") == "correct"


def test_each_step_can_be_switched_off() -> None:
    assert _verdict("ANSWER: canberra", ("Canberra",), "exact", case=False) == "wrong"
    assert _verdict("ANSWER: Canberra!", ("Canberra",), "exact", punctuation=False) == "wrong"
    assert _verdict("ANSWER: the Nile", ("Nile",), "exact", articles=False) == "wrong"
    assert _verdict("ANSWER: four", ("4",), "exact") == "wrong"
    assert _verdict("ANSWER: four", ("4",), "exact", number_words=True) == "correct"
    assert _verdict("It has four legs", ("4",), number_words=True) == "correct"
    # Full-width digits are digits after NFKC, not without it.
    assert _verdict("ANSWER: ４２", ("42",), "exact") == "correct"
    assert _verdict("ANSWER: ４２", ("42",), "exact", nfkc=False) == "wrong"


@pytest.mark.parametrize(
    ("said", "key", "verdict"),
    [
        ("twenty one", "20", "wrong"),  # read word by word it held "20"
        ("three thousand", "1000", "wrong"),
        ("one hundred and five", "100", "wrong"),
        ("one hundred and five", "105", "correct"),
        ("forty-two", "42", "correct"),
        ("forty two", "42", "correct"),
        ("two thousand and twenty four", "2024", "correct"),
        ("one million two hundred thousand", "1200000", "correct"),
        ("nineteen hundred", "1900", "correct"),
        ("one two three", "2", "correct"),  # a list of three numbers holds 2
        ("rock and roll", "rock and roll", "correct"),
    ],
)
def test_number_words_read_as_whole_numbers(said: str, key: str, verdict: str) -> None:
    assert _verdict(f"ANSWER: {said}", (key,), number_words=True) == verdict


def test_unknown_or_mistyped_steps_are_refused() -> None:
    with pytest.raises(ValueError, match="options"):
        validate_scoring("qa", {"method": "includes", "options": {"casing": True}})
    with pytest.raises(ValueError, match="true or false"):
        validate_scoring("qa", {"method": "exact", "options": {"case": 1}})


@given(st.text(max_size=60))
def test_default_steps_are_normalize_text(text: str) -> None:
    assert normalize_with(text, DEFAULT_STEPS) == normalize_text(text)


@given(st.text(max_size=60), st.booleans(), st.booleans(), st.booleans())
def test_steps_are_idempotent_when_whitespace_collapses(
    text: str, case: bool, punctuation: bool, articles: bool
) -> None:
    steps = Steps(case=case, punctuation=punctuation, articles=articles, number_words=True)
    once = normalize_with(text, steps)
    assert normalize_with(once, steps) == once
