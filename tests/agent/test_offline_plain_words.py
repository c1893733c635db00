"""The offline brain on requests as a newcomer types them: titles and answers written without
the documented markers, a change of mind before a request, and names typed with a slip."""

from __future__ import annotations

from typing import Any

import pytest

from benchgen.agent.brains.offline.questions import read_title
from tests.agent.test_offline_planner import Chat, labels
from tests.support import MCQ, QA, World


def qa(*pairs: tuple[str, str]) -> list[dict[str, Any]]:
    return [
        {"prompt": p, "answer": [a], "choices": None, "tags": [], "metadata": {}} for p, a in pairs
    ]


@pytest.mark.parametrize(
    ("text", "title", "questions"),
    [
        (
            "new benchmark 'Geo'\n1. Capital of Spain? - Madrid\n2. Capital of Peru? - Lima",
            "Geo",
            qa(("Capital of Spain?", "Madrid"), ("Capital of Peru?", "Lima")),
        ),
        (
            "create benchmark Fruit\nQuestion: Colour of a banana?\nAnswer: yellow",
            "Fruit",
            qa(("Colour of a banana?", "yellow")),
        ),
        (
            "create a benchmark called Maths with these questions:\nWhat is 2+2? 4\n"
            "What is 7-9? -2",
            "Maths",
            qa(("What is 2+2?", "4"), ("What is 7-9?", "-2")),
        ),
    ],
)
def test_a_plainly_written_title_and_questions_are_proposed(
    world: World, text: str, title: str, questions: list[dict[str, Any]]
) -> None:
    turn = Chat(world).say(text)
    assert turn.proposal is not None and turn.proposal.kind == "create_benchmark", turn.reply
    assert turn.proposal.arguments["title"] == title
    assert turn.proposal.arguments["questions"] == questions


@pytest.mark.parametrize(
    "text",
    ["make a benchmark", "make a benchmark with these questions:", "create a benchmark about geo"],
)
def test_words_about_the_benchmark_are_no_title(world: World, text: str) -> None:
    turn = Chat(world).say(f"{text}\nQ: Capital of Peru?\nA: Lima")
    assert turn.proposal is None
    assert turn.reply.startswith("What should the benchmark be called?"), turn.reply


def test_a_title_is_never_read_off_the_next_line() -> None:
    assert read_title("make a benchmark\nQ: Capital of Peru?\nA: Lima") == ""
    assert read_title("create a quiz\nFrance: Paris") == ""


def test_a_change_of_mind_before_a_request_is_read(world: World) -> None:
    chat = Chat(world)
    capitals = chat.benchmark(QA)
    for text in ("actually, run random on Capitals", "no, run random on Capitals"):
        turn = chat.say(text)
        assert turn.proposal is not None, turn.reply
        assert turn.proposal.arguments["benchmark_id"] == capitals
    assert chat.say("no").reply == "OK, I left it. Nothing was done."


def test_a_name_typed_with_a_slip_is_said_and_its_closest_offered_first(world: World) -> None:
    chat = Chat(world)
    capitals = chat.benchmark(QA)
    chat.benchmark(MCQ)
    turn = chat.say("run random on Captials")
    assert turn.proposal is None
    assert turn.reply.startswith('There is no benchmark called "Captials" here.'), turn.reply
    assert f"Capitals ({capitals})" in labels(turn)[0]
    turn = chat.say("run radnom on Capitals")
    assert turn.reply.startswith('There is no model called "radnom" here'), turn.reply
    assert "(mdl_builtin_random)" in labels(turn)[0]
