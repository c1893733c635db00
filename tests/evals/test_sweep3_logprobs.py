"""Letter log-probs that are not numbers (NaN, from a model whose weights or precision broke):
an error for the question, never a letter chosen by chance or a value no database stores."""

from __future__ import annotations

import math

import pytest

from benchgen.evals.engine import run_items
from benchgen.evals.scorers.choice import score_choice_logprob
from benchgen.evals.types import Answer, Completion, Item, Key

pytestmark = pytest.mark.anyio

NAN_FIRST = {"A": math.nan, "B": -0.1, "C": -2.0}


class NaNModel:
    """A local model whose every log-prob comes out NaN, as a broken fp16 checkpoint gives."""

    max_in_flight = 1

    async def complete(self, item: Item, prompt: str) -> Completion:
        return Completion("A", 3, 1, letter_logprobs={"A": math.nan, "B": math.nan})

    async def aclose(self) -> None:
        pass


async def test_a_model_giving_nan_log_probs_fails_its_question() -> None:
    answers: list[Answer] = []
    report = await run_items(NaNModel(), [(Item(0, "q", ("x", "y")), "q")], on_batch=answers.extend)
    assert (report.done, report.errors) == (0, 1)
    assert answers[0].letter_logprobs is None
    assert answers[0].error is not None and "not numbers (NaN)" in answers[0].error


def test_a_stored_nan_log_prob_never_wins_the_letter() -> None:
    """Stored before the check (SQLite keeps NaN): the first letter won, whatever the others."""
    answer = Answer(0, "q", "A", None, 0, 0, 0, 1, letter_logprobs=NAN_FIRST)
    scored = score_choice_logprob(answer, Key(("B",), ("x", "y", "z")), {})
    assert (scored.outcome, scored.extracted) == ("correct", "B")
