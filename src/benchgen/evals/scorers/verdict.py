"""The Scored values scoring methods return, built one way so outcomes read alike everywhere."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial

from benchgen.evals.types import Scored

# A method's scorer with its options read once, for many answers: it takes the reply and the
# key's accepted answers and choices as they are stored, without a Key made for each answer.
Prepared = Callable[[str | None, Sequence[str], Sequence[str] | None], Scored]
# A verdict is made for every answer scored, a million in a large rescoring: made straight from
# its four fields, without the named tuple's Python-level __new__ (half the time, measured).
_made = partial(tuple.__new__, Scored)


def judged(
    correct: bool,
    extracted: str | None,
    score: float | None = None,
    reasoning: str | None = None,
) -> Scored:
    """A correct or wrong verdict; `score` defaults to 1.0 or 0.0."""
    if score is None:
        score = 1.0 if correct else 0.0
    verdict: Scored = _made(("correct" if correct else "wrong", score, extracted, reasoning))
    return verdict


def no_answer(extracted: str | None = None, reasoning: str | None = None) -> Scored:
    """Extraction found nothing usable: its own outcome, never a silent "wrong"."""
    return Scored("no_answer", 0.0, extracted, reasoning or "no answer found in the reply")


def errored(reasoning: str, extracted: str | None = None) -> Scored:
    """Scoring could not be done: no reply, a broken key, an unreadable judge verdict."""
    return Scored("error", 0.0, extracted, reasoning)


NO_REPLY = errored("the model gave no reply")
NO_ANSWER = no_answer()  # verdicts are immutable: the common ones are shared, not rebuilt
