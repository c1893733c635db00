"""`includes` scoring: an accepted answer appears, as a whole word or phrase, in the final answer
("The capital of Australia is Canberra." is right for "Canberra")."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from benchgen.evals.scorers import verdict
from benchgen.evals.scorers.exact import accepted_by
from benchgen.evals.scorers.extract import extract_final_answer
from benchgen.evals.scorers.normalize import Steps, normalize_with
from benchgen.evals.types import Key, Scored


def score_includes(raw: str | None, key: Key, options: Mapping[str, Any]) -> Scored:
    """Correct when a normalised accepted answer occurs in the normalised final answer as whole
    words (so "4" is not found in "14", nor "Rome" in "Romeo").

    Args:
        raw: the model's reply; None when it gave none.
        key: the accepted answers.
        options: the normalisation steps (`normalize.STEP_NAMES`).

    Returns:
        correct / wrong, no_answer when nothing could be extracted, error without a reply.
    """
    if raw is None:
        return verdict.NO_REPLY
    extracted = extract_final_answer(raw)
    if extracted is None:
        return verdict.NO_ANSWER
    steps = Steps.from_options(options)
    # Spaces at both ends make a substring test a whole-word test on the normalised words.
    haystack = f" {' '.join(normalize_with(extracted, steps).split())} "
    normalised = accepted_by(steps)
    found = any(_phrase(normalised(answer)) in haystack for answer in key.answers)
    return verdict.judged(found, extracted)


def _phrase(normalised: str) -> str:
    words = normalised.split()
    # An answer that normalises to nothing (only punctuation) can never be found.
    return f" {' '.join(words)} " if words else "\0"
