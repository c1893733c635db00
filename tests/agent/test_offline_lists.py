"""The offline brain's lists: several asked for in one message are all answered, and a custom
benchmark (tasks scored by its bundle's program) is never said to hold "0 questions"."""

from __future__ import annotations

import pytest

from benchgen.agent.brains.offline import render
from benchgen.agent.brains.offline.ask import Ask
from benchgen.agent.brains.offline.planner import plan
from benchgen.core.config import Settings
from tests.agent.test_offline_planner import Chat, tools_used
from tests.services.test_compare import RANDOM
from tests.support import World

PUZZLES = {
    "id": "bm_puzzles",
    "title": "Puzzles",
    "format": "custom",
    "visibility": "private",
    "question_count": 0,
}


@pytest.mark.parametrize(
    "text",
    [
        "list my benchmarks and models",
        "show my models and benchmarks",
        "what benchmarks and models do I have?",
        "list my benchmarks, models and runs",
        "benchmarks & my models please",
    ],
)
def test_every_list_asked_for_is_answered_in_one_turn(world: World, text: str) -> None:
    chat = Chat(world)
    capitals = chat.benchmark()
    turn = chat.say(text)
    assert turn.status == "completed", turn.reply
    asked = [f"list_{kind}" for kind in ("benchmarks", "models", "runs") if kind in text]
    assert sorted(tools_used(turn)) == sorted(asked)
    assert f"Capitals ({capitals}): qa, 2 questions, private" in turn.reply
    assert f"Baseline: seeded random ({RANDOM}): builtin, free" in turn.reply
    assert ("You have no runs yet" in turn.reply) == ("runs" in text)


def test_one_list_asked_for_is_the_only_one_listed(world: World) -> None:
    turn = Chat(world).say("list my benchmarks and tell me a joke")
    assert tools_used(turn) == ["list_benchmarks"]


def test_a_custom_benchmark_in_a_list_counts_no_questions() -> None:
    assert render.benchmark_line(PUZZLES) == "Puzzles (bm_puzzles): custom, private"
    qa = {**PUZZLES, "format": "qa", "question_count": 2}
    assert render.benchmark_line(qa) == "Puzzles (bm_puzzles): qa, 2 questions, private"


def test_a_custom_benchmark_shown_counts_no_questions() -> None:
    shown = render.benchmark({"benchmark": PUZZLES, "questions": []})
    assert shown == "Puzzles (bm_puzzles): custom, private."
    frozen = {**PUZZLES, "format": "mcq", "question_count": 3, "questions_frozen": True}
    shown = render.benchmark({"benchmark": frozen, "questions": []})
    assert (
        shown.splitlines()[0]
        == "Puzzles (bm_puzzles): mcq, private, 3 questions, questions frozen."
    )


def test_the_first_question_of_a_custom_benchmark_is_no_count_of_none() -> None:
    results = [
        ("list_benchmarks", {"benchmarks": [PUZZLES]}),
        ("show_benchmark", {"benchmark": PUZZLES, "questions": []}),
    ]
    reply = plan(
        Ask("what is the answer to the first question of Puzzles?", Settings(), [], results)
    )
    assert isinstance(reply, str) and "0 questions" not in reply, reply
    assert "custom benchmark" in reply and "tasks" in reply
