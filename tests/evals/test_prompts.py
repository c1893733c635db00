"""Prompts: qa and mcq instructions, and the letter-only prompt for log-prob scoring."""

from __future__ import annotations

import pytest

from benchgen.evals.prompts import choice_labels, letter_only_prompt, render_prompt
from benchgen.evals.scorers.extract import extract_choice
from benchgen.evals.types import Item

MCQ = Item(index=0, prompt=" Which is blue? ", choices=("grass", " sky", "sun"))


def test_qa_prompt_asks_for_a_final_answer_line() -> None:
    prompt = render_prompt(Item(index=0, prompt="Capital of France?"))
    assert prompt.startswith("Capital of France?\n\n")
    assert "briefly" in prompt
    assert prompt.endswith("ANSWER: <your answer>")


def test_mcq_prompt_lists_lettered_choices_and_asks_for_one_letter() -> None:
    prompt = render_prompt(MCQ)
    assert prompt.startswith("Which is blue?\n\nA. grass\nB. sky\nC. sun\n\n")
    assert "ANSWER: X" in prompt and "A, B, C." in prompt
    # The instruction itself must not read as an answer if a model echoes it.
    assert extract_choice(prompt, 3) is None


def test_letter_only_prompt() -> None:
    prompt = letter_only_prompt(MCQ)
    assert "A. grass" in prompt and "letter of the correct option only (A, B, C)" in prompt
    assert "ANSWER" not in prompt
    with pytest.raises(ValueError):
        letter_only_prompt(Item(index=0, prompt="free answer"))


@pytest.mark.parametrize("n", [0, 1, 27])
def test_choice_counts_outside_two_to_twenty_six_are_refused(n: int) -> None:
    with pytest.raises(ValueError):
        choice_labels(n)
    with pytest.raises(ValueError):
        render_prompt(Item(index=0, prompt="q", choices=("x",) * n))


def test_choice_labels() -> None:
    assert choice_labels(4) == "ABCD"
