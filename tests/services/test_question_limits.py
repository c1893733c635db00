"""Size caps on one question (prompt, answers, choices, metadata): a clear 422 naming the field."""

from __future__ import annotations

from typing import Any

import pytest

from benchgen.core.context import Principal
from benchgen.core.errors import InvalidInput
from benchgen.services.benchmarks import lifecycle
from benchgen.services.specs import (
    MAX_ANSWER,
    MAX_ANSWERS,
    MAX_CHOICE,
    MAX_METADATA_BYTES,
    MAX_METADATA_DEPTH,
    MAX_PROMPT,
)
from tests.support import World


def qa(**question: Any) -> dict[str, Any]:
    return {
        "title": "Sizes",
        "format": "qa",
        "questions": [{"prompt": "p?", "answer": "a", **question}],
    }


def mcq(**question: Any) -> dict[str, Any]:
    base = {"prompt": "p?", "choices": ["yes", "no"], "answer": "A"}
    return {"title": "Sizes", "format": "mcq", "questions": [{**base, **question}]}


def nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth):
        value = {"a": value}
    return value


@pytest.fixture
def ana(world: World) -> Principal:
    return Principal.web(world.user("ana@example.com"))


def test_the_caps_are_generous() -> None:
    assert (MAX_PROMPT, MAX_ANSWER, MAX_CHOICE) == (20_000, 2_000, 2_000)
    assert (MAX_METADATA_BYTES, MAX_ANSWERS) == (16 * 1024, 100)


OVER = {
    "prompt": (qa(prompt="x" * (MAX_PROMPT + 1)), ["questions", 0, "prompt"]),
    "answer": (qa(answer="x" * (MAX_ANSWER + 1)), ["questions", 0, "answer"]),
    "answers": (qa(answer=[f"a{i}" for i in range(MAX_ANSWERS + 1)]), ["questions", 0, "answer"]),
    "choice": (mcq(choices=["yes", "x" * (MAX_CHOICE + 1)]), ["questions", 0, "choices", 1]),
    "metadata": (
        qa(metadata={"note": "é" * (MAX_METADATA_BYTES // 2)}),
        ["questions", 0, "metadata"],
    ),
    "nesting": (qa(metadata=nested(5000)), []),
    # Few bytes, but deeper than a response can show: it was stored, then a 500.
    "depth": (qa(metadata=nested(MAX_METADATA_DEPTH + 1)), ["questions", 0, "metadata"]),
}


@pytest.mark.parametrize(("data", "loc"), OVER.values(), ids=OVER)
def test_a_question_over_a_cap_is_refused_naming_the_field(
    world: World, ana: Principal, data: dict[str, Any], loc: list[str | int]
) -> None:
    with pytest.raises(InvalidInput) as caught:
        world.do(ana, lifecycle.create_benchmark, data)
    assert caught.value.errors[0]["loc"] == loc
    where = ".".join(str(part) for part in loc)
    assert caught.value.message.startswith(f"{where}: " if where else "input nested too deeply")


@pytest.mark.both_backends
def test_questions_at_the_caps_are_accepted(world: World, ana: Principal) -> None:
    # Metadata is measured as compact UTF-8 JSON: this is exactly the limit.
    note = "x" * (MAX_METADATA_BYTES - len('{"note":""}'))
    spec = qa(
        prompt="x" * MAX_PROMPT,
        answer=["y" * MAX_ANSWER] + [f"a{i}" for i in range(MAX_ANSWERS - 1)],
        metadata={"note": note},
    )
    assert world.do(ana, lifecycle.create_benchmark, spec).benchmark.question_count == 1
    deepest = qa(metadata=nested(MAX_METADATA_DEPTH))
    assert world.do(ana, lifecycle.create_benchmark, deepest).benchmark.question_count == 1


INVISIBLE = {
    "prompt": (qa(prompt="\u200b"), ["questions", 0, "prompt"]),
    "answer": (qa(answer=["Paris", "\u200b\u2060"]), ["questions", 0, "answer"]),
    "choice": (mcq(choices=["yes", "\ufeff"]), ["questions", 0, "choices", 1]),
}


@pytest.mark.parametrize(("data", "loc"), INVISIBLE.values(), ids=INVISIBLE)
def test_a_text_of_invisible_characters_only_is_refused_at_its_field(
    world: World, ana: Principal, data: dict[str, Any], loc: list[str | int]
) -> None:
    """An answer no reply can match, or a prompt or choice nobody can read, saved without a
    word: whoever wrote it sees nothing wrong on the page."""
    with pytest.raises(InvalidInput) as caught:
        world.do(ana, lifecycle.create_benchmark, data)
    [problem] = caught.value.errors
    assert problem["loc"] == loc and "visible" in problem["msg"]
