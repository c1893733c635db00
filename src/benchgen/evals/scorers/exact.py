"""Exact-match scoring: the normalised final answer equals a normalised accepted answer."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import cache, lru_cache
from typing import Any

from benchgen.evals.scorers import verdict
from benchgen.evals.scorers.extract import extract_final_answer
from benchgen.evals.scorers.normalize import Steps, normaliser, written_as_one_of
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
    return _scorer(Steps.from_options(options))(raw, key.answers, key.choices)


def exact_scorer(options: Mapping[str, Any]) -> verdict.Prepared:
    """`score_exact` with its options read once, for scoring many answers alike."""
    return _scorer(Steps.from_options(options))


@cache  # one per combination of steps (64 at most)
def _scorer(steps: Steps) -> verdict.Prepared:
    normalise, normalised = normaliser(steps), accepted_by(steps)

    def score(raw: str | None, answers: Sequence[str], _: Sequence[str] | None) -> Scored:
        if raw is None:
            return verdict.NO_REPLY
        extracted = extract_final_answer(raw)
        if extracted is None:
            return verdict.NO_ANSWER
        # Equal texts normalise alike: a verbatim answer needs no normalising at all.
        if extracted in answers:
            return verdict.judged(True, extracted)
        found = normalise(extracted)
        if not found:  # "the", "?": equal, normalised, to every answer that is only "A" or "%"
            return verdict.judged(written_as_one_of(extracted, answers), extracted)
        # `in` over `map` compares in C: no Python frame per accepted answer.
        return verdict.judged(found in map(normalised, answers), extracted)

    return score


# One normaliser per combination of steps (64 at most), each remembering the accepted answers
# it normalised: they come back again and again (a dry run and then apply, every run of a
# benchmark, one process serving them all); a benchmark holds at most 10,000 questions.
@cache
def accepted_by(steps: Steps) -> Callable[[str], str]:
    """Normalises accepted answers with these steps, each computed once while it stays in use
    (a function of the answer alone: the steps are not hashed again for every answer)."""
    return lru_cache(maxsize=65_536)(normaliser(steps))
