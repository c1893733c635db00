"""Deterministic baseline models for tests and demos: free, offline, same answers every run."""

from __future__ import annotations

import random
from collections.abc import Callable

from benchgen.evals.prompts import LABELS
from benchgen.evals.scorers.registry import CUSTOM, MCQ, QA
from benchgen.evals.types import Completion, FatalModelError, Item, ModelSpec

_PUNCTUATION = ".,;:!?\"'()[]{}"


class BuiltinAdapter:
    """One of the baselines `random`, `first-choice` or `echo`, chosen by `spec.name`.

    `random` reads `spec.params["seed"]` (0): the same seed, item and sample give the same
    answer. No baseline reads the other generation settings (runs refuse them).
    """

    max_in_flight: int | None = None  # answers at once: nothing waits

    def __init__(self, spec: ModelSpec) -> None:
        answer = _BASELINES.get(spec.name)
        if answer is None:
            known = ", ".join(sorted(_BASELINES))
            raise FatalModelError(f"unknown built-in model {spec.name!r} (known: {known})")
        self._answer = answer
        self._seed = int(spec.params.get("seed", 0))

    async def complete(self, item: Item, prompt: str) -> Completion:
        """Answer at once, without tokens or cost."""
        return Completion(text=self._answer(item, prompt, self._seed))

    async def aclose(self) -> None:
        """Nothing to release."""


def _random(item: Item, prompt: str, seed: int) -> str:
    # Seeded by the question, not by call order, so concurrency cannot change the answers.
    # Sample 0 keeps the seed string of runs made before sampling, so their answers stay.
    salt = f"{seed}:{item.index}" + (f":{item.sample}" if item.sample else "")
    rng = random.Random(salt)  # noqa: S311 - a baseline, not a secret
    if item.choices:
        return f"ANSWER: {rng.choice(LABELS[: len(item.choices)])}"
    # The question's own words, so a change to the instruction template cannot change answers.
    words = [word.strip(_PUNCTUATION) for word in item.prompt.split()]
    words = [word for word in words if word]
    return f"ANSWER: {rng.choice(words) if words else ''}".rstrip()


def _first_choice(item: Item, prompt: str, seed: int) -> str:
    return "ANSWER: A"


def _echo(item: Item, prompt: str, seed: int) -> str:
    return prompt


_BASELINES: dict[str, Callable[[Item, str, int], str]] = {
    "random": _random,
    "first-choice": _first_choice,
    "echo": _echo,
}
# The benchmark formats each baseline can answer: "always A" means nothing without choices, so
# offering it for free-answer questions would only waste a run.
FORMATS: dict[str, frozenset[str]] = {
    "random": frozenset({QA, MCQ, CUSTOM}),
    "first-choice": frozenset({MCQ}),
    "echo": frozenset({QA, MCQ, CUSTOM}),
}
