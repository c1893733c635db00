"""The real SmolLM2 model, in-process through xllamacpp, answering ten easy questions end to end."""

from __future__ import annotations

import importlib.util
import os
import time

import pytest

from benchgen.evals.adapters import build_adapter
from benchgen.evals.adapters.local_gguf import INSTALL_HINT, smollm2_path
from benchgen.evals.engine import run_items
from benchgen.evals.prompts import letter_only_prompt, render_prompt
from benchgen.evals.types import THREADS_PARAM, Answer, Item, ModelSpec
from tests.support import LOCAL_THREADS

pytestmark = pytest.mark.anyio

QUESTIONS = [
    ("What is the capital of France?", ("Berlin", "Paris", "Rome", "Madrid"), "B"),
    ("How many legs does a spider have?", ("Six", "Four", "Eight", "Ten"), "C"),
    ("Which planet is known as the Red Planet?", ("Mars", "Venus", "Jupiter", "Saturn"), "A"),
    ("What is 2 + 2?", ("3", "5", "22", "4"), "D"),
    ("What colour is the sky on a clear day?", ("Green", "Blue", "Red", "Black"), "B"),
    ("Which animal barks?", ("Cat", "Cow", "Dog", "Fish"), "C"),
    ("What do bees make?", ("Honey", "Milk", "Silk", "Wool"), "A"),
    ("Which is a fruit?", ("Carrot", "Potato", "Onion", "Apple"), "D"),
    ("What is frozen water called?", ("Steam", "Ice", "Sand", "Glass"), "B"),
    ("How many days are in a week?", ("Five", "Six", "Seven", "Eight"), "C"),
]
ITEMS = [Item(i, question, choices) for i, (question, choices, _) in enumerate(QUESTIONS)]


def _missing() -> str | None:
    if importlib.util.find_spec("xllamacpp") is None:
        return f"xllamacpp is not installed ({INSTALL_HINT})"
    if smollm2_path() is None:
        return f"the SmolLM2 model package is not installed ({INSTALL_HINT})"
    return None


@pytest.fixture(scope="module")
def local_model() -> None:
    """Skip without the local-model extra, except under CI=true where it must be there."""
    reason = _missing()
    if reason:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI=true requires the local model: {reason}")
        pytest.skip(reason)


async def _run(params: dict[str, object], prompts: list[str]) -> tuple[list[Answer], float]:
    spec = ModelSpec("local_gguf", "smollm2", params={THREADS_PARAM: LOCAL_THREADS, **params})
    adapter = build_adapter(spec)
    answers: list[Answer] = []
    started = time.perf_counter()
    report = await run_items(
        adapter, list(zip(ITEMS, prompts, strict=True)), on_batch=answers.extend
    )
    await adapter.aclose()
    assert (report.done, report.errors) == (10, 0)
    assert sorted(a.index for a in answers) == list(range(10))
    return answers, time.perf_counter() - started


async def test_smollm2_answers_ten_questions_by_letter_logprobs(local_model: None) -> None:
    answers, elapsed = await _run({"letter_logprobs": True}, [letter_only_prompt(i) for i in ITEMS])
    right = 0
    for answer in answers:
        logprobs = answer.letter_logprobs
        assert logprobs and set(logprobs) <= set("ABCD")
        assert all(value <= 0 for value in logprobs.values())
        right += max(logprobs, key=logprobs.__getitem__) == QUESTIONS[answer.index][2]
    print(f"SmolLM2 log-prob mcq: {right}/10 right in {elapsed:.2f} s")


async def test_smollm2_answers_ten_questions_in_text(local_model: None) -> None:
    answers, elapsed = await _run({"max_tokens": 48}, [render_prompt(i) for i in ITEMS])
    assert all(a.raw and a.output_tokens > 0 and a.input_tokens > 0 for a in answers)
    assert all(a.letter_logprobs is None for a in answers)
    print(f"SmolLM2 generated mcq: 10 replies in {elapsed:.2f} s")
