"""Exact-match scoring: the normalised final answer equals a normalised accepted answer."""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from benchgen.evals.scorers import verdict
from benchgen.evals.scorers.extract import extract_final_answer
from benchgen.evals.scorers.normalize import Steps, normalize_with
from benchgen.evals.types import Key, Scored


def score_exact(raw: str | None, key: Key, options: Mapping[str, Any]) -> Scored:
    """Correct when the extracted answer matches any accepted answer after normalising.

    Args:
        raw: the model's reply; None when it gave none.
        key: the accepted answers.
        options: the normalisation steps (`normalize.STEP_NAMES`); missing ones keep their
            default.

    Returns:
        correct / wrong, no_answer when nothing could be extracted, error without a reply.
    """
    if raw is None:
        return verdict.NO_REPLY
    extracted = extract_final_answer(raw)
    if extracted is None:
        return verdict.no_answer()
    return verdict.judged(_matches(extracted, key.answers, Steps.from_options(options)), extracted)


def _matches(extracted: str, answers: tuple[str, ...], steps: Steps) -> bool:
    # Equal texts normalise alike: a verbatim answer needs no normalising at all.
    if extracted in answers:
        return True
    target = normalize_with(extracted, steps)
    return any(target == accepted(answer, steps) for answer in answers)


# A question's accepted answers come back again and again (a dry run and then apply, every run
# of a benchmark, one process serving them all); a benchmark holds at most 10,000 questions.
@lru_cache(maxsize=65_536)
def accepted(answer: str, steps: Steps = Steps()) -> str:  # noqa: B008 - frozen, hashable
    """An accepted answer after normalising, computed once while it stays in use."""
    return normalize_with(answer, steps)
