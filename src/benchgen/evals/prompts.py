"""The prompts a model sees for one question: free answer (qa), lettered choices (mcq), letters."""

from __future__ import annotations

import string
from collections.abc import Sequence

from benchgen.evals.types import Item

LABELS = string.ascii_uppercase
# The templates' version, recorded on each run: a change to any wording below bumps it, so two
# runs' prompts are known to match when their versions do.
PROMPT_VERSION = 1
# Chain-of-thought templates are a fixed choice, not free text: a run's settings never carry
# instructions of their own into the question prompt beyond the system prompt.
CHAIN_OF_THOUGHT = {
    "step_by_step": "Think step by step first, then write the final ANSWER line.",
}

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


def compose_prompt(
    prompt: str, examples: Sequence[tuple[Item, str]] = (), chain_of_thought: str | None = None
) -> str:
    """`prompt` (a rendered question) after worked examples, with a chain-of-thought line.

    Args:
        prompt: the question as `render_prompt` or `letter_only_prompt` made it.
        examples: (question, its accepted answer) pairs shown before the question.
        chain_of_thought: a key of CHAIN_OF_THOUGHT, or None.

    Raises:
        KeyError: an unknown chain-of-thought template.
    """
    parts = [_example(number, item, answer) for number, (item, answer) in enumerate(examples, 1)]
    if parts:
        parts.append("Now the question to answer:")
    parts.append(prompt)
    if chain_of_thought:
        parts.append(CHAIN_OF_THOUGHT[chain_of_thought])
    return "\n\n".join(parts)


def _example(number: int, item: Item, answer: str) -> str:
    shown = item.prompt.strip()
    if item.choices is not None:
        shown = _question_with_choices(item.prompt, item.choices)
    return f"Example {number}:\n{shown}\nANSWER: {answer.strip()}"
