"""The prompts a model sees for one question: free answer (qa), lettered choices (mcq), letters."""

from __future__ import annotations

import string

from benchgen.evals.types import Item

LABELS = string.ascii_uppercase

_QA_INSTRUCTION = (
    "Answer briefly. End your reply with a final line of the form:\nANSWER: <your answer>"
)
_MCQ_INSTRUCTION = (
    "Choose the single best option. End your reply with a final line of the form:\n"
    "ANSWER: X\nwhere X is one letter from {labels}."
)
_LETTER_ONLY_INSTRUCTION = "Reply with the letter of the correct option only ({labels})."


def choice_labels(n_choices: int) -> str:
    """The letters that label `n_choices` options: "ABCD" for four.

    Raises:
        ValueError: fewer than two or more than 26 options.
    """
    if not 2 <= n_choices <= len(LABELS):
        raise ValueError(f"a question needs 2 to {len(LABELS)} choices, got {n_choices}")
    return LABELS[:n_choices]


def render_prompt(item: Item) -> str:
    """The prompt for one question: qa when it has no choices, mcq when it has.

    Raises:
        ValueError: the item has fewer than two or more than 26 choices.
    """
    if item.choices is None:
        return f"{item.prompt.strip()}\n\n{_QA_INSTRUCTION}"
    labels = choice_labels(len(item.choices))
    instruction = _MCQ_INSTRUCTION.format(labels=", ".join(labels))
    return f"{_question_with_choices(item.prompt, item.choices)}\n\n{instruction}"


def letter_only_prompt(item: Item) -> str:
    """An mcq prompt asking for the letter alone, so first-token log-probs pick the choice.

    Raises:
        ValueError: the item has no choices, or fewer than two or more than 26.
    """
    if item.choices is None:
        raise ValueError("a letter-only prompt needs a multiple-choice item")
    labels = choice_labels(len(item.choices))
    instruction = _LETTER_ONLY_INSTRUCTION.format(labels=", ".join(labels))
    return f"{_question_with_choices(item.prompt, item.choices)}\n\n{instruction}"


def _question_with_choices(question: str, choices: tuple[str, ...]) -> str:
    lines = [f"{label}. {text.strip()}" for label, text in zip(LABELS, choices, strict=False)]
    return question.strip() + "\n\n" + "\n".join(lines)
