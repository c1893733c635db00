"""Multiple-choice scoring: the letter a reply chose, or the letter with the highest log-prob."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

from benchgen.evals.prompts import LABELS
from benchgen.evals.scorers import verdict
from benchgen.evals.scorers.extract import extract_choice
from benchgen.evals.types import Answer, Key, Scored

# A choice verdict is one of two per letter: each is made once and shared (verdicts are
# immutable), not made again for every answer.
_judged = cache(verdict.judged)


def score_choice(raw: str | None, key: Key, options: Mapping[str, Any]) -> Scored:
    """Correct when the letter found by `extract_choice` is the key's letter.

    Args:
        raw: the model's reply; None when it gave none.
        key: `answers[0]` is the correct letter; `choices` gives how many options there are.
        options: unused; choice scoring takes no options.

    Returns:
        correct / wrong; no_answer when no valid letter was found; error without a reply or
        with a key that lacks choices or a letter.
    """
    return _score_choice(raw, key.answers, key.choices)


def choice_scorer(options: Mapping[str, Any]) -> verdict.Prepared:
    """`score_choice` for scoring many answers alike (it takes no options)."""
    return _score_choice


def _score_choice(raw: str | None, answers: Sequence[str], choices: Sequence[str] | None) -> Scored:
    if raw is None:
        return verdict.NO_REPLY
    problem = _key_problem(answers, choices)
    if problem:
        return verdict.errored(problem)
    letter = extract_choice(raw, len(choices or ()))
    if letter is None:
        return verdict.NO_ANSWER
    return _judged(letter == answers[0].strip().upper(), letter)


def score_choice_logprob(answer: Answer, key: Key, options: Mapping[str, Any]) -> Scored:
    """Correct when the valid letter with the highest log-prob is the key's letter.

    Log-prob keys are compared stripped and upper-cased (tokenisers often yield " B"); letters
    beyond the question's choices are ignored.

    Args:
        answer: the engine's record, whose `letter_logprobs` the adapter filled.
        key: `answers[0]` is the correct letter; `choices` gives how many options there are.
        options: unused; log-prob scoring takes no options.

    Returns:
        correct / wrong; no_answer when no valid letter has a log-prob; error with a key that
        lacks choices or a letter.
    """
    problem = _key_problem(key.answers, key.choices)
    if problem:
        return verdict.errored(problem)
    valid = set(LABELS[: len(key.choices or ())])
    best: dict[str, float] = {}
    for label, logprob in (answer.letter_logprobs or {}).items():
        letter = label.strip().upper()
        if letter in valid and not math.isnan(logprob):  # NaN (stored before) never wins
            best[letter] = max(logprob, best.get(letter, logprob))
    if not best:
        return verdict.no_answer(reasoning="no log-prob for any valid letter")
    chosen = max(sorted(best), key=best.__getitem__)
    return verdict.judged(chosen == key.answers[0].strip().upper(), chosen)


def _key_problem(answers: Sequence[str], choices: Sequence[str] | None) -> str | None:
    if not choices:
        return "the key has no choices"
    if not answers or not answers[0].strip():
        return "the key has no correct letter"
    return None
