"""The offline brain's follow-ups for a new user: what only an administrator can do links the
admin page to an administrator alone (the agent knowing the flag, never acting on it), the
leaderboard read and shown, a model that does not exist said so, and one question's answer given
only to those who may see the key."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo

from benchgen.core.context import Principal
from benchgen.services.accounts import credits, users
from benchgen.services.benchmarks import lifecycle
from benchgen.services.runs import leaderboards
from tests.agent.scripted import last_returns, new_conversation, say, think_with
from tests.agent.test_offline_planner import Chat, labels, run_of, tools_used
from tests.agent.test_offline_requests import finished
from tests.services.test_compare import FIRST, RANDOM
from tests.support import MCQ, OPERATOR, World

# --- 1. what only an administrator can do -----------------------------------------------------


@pytest.mark.parametrize(
    ("text", "page"),
    [
        ("make me an admin", "/admin/users"),
        ("give bob@example.com admin rights", "/admin/users"),
        ("add a user bob@example.com", "/admin/users"),
        ("turn on sign ups", "/admin/settings"),
        ("allow the agent to publish", "/admin/settings"),
    ],
)
def test_an_administrator_is_given_the_admin_page(world: World, text: str, page: str) -> None:
    other = world.user("bob@example.com")
    chat = Chat(world, "root@example.com")
    admin = chat.user
    world.do(OPERATOR, users.set_admin, admin, True)
    turn = chat.say(text)
    assert (turn.status, turn.proposal) == ("completed", None), turn.reply
    assert tools_used(turn) == ["my_account"]
    assert turn.reply.startswith("I can't "), turn.reply
    assert "You are an administrator of this BenchGen server" in turn.reply
    assert turn.reply.endswith(world.rt.settings.link(page))
    # Knowing changes nothing: nobody's rights moved.
    assert world.do(Principal.web(admin), users.get_me).is_admin
    assert not world.do(Principal.web(other), users.get_me).is_admin


def test_anyone_else_is_told_to_ask_an_administrator_and_stays_one(world: World) -> None:
    chat = Chat(world)
    turn = chat.say("make me an admin")
    assert tools_used(turn) == ["my_account"]
    assert "ask the person who runs it" in turn.reply
    assert "/admin" not in turn.reply and "You are an administrator" not in turn.reply
    assert not world.do(chat.web, users.get_me).is_admin


@pytest.mark.parametrize("admin", [True, False])
def test_my_account_reports_the_users_own_facts_only(world: World, admin: bool) -> None:
    """What any brain (a hosted one too) reads; the turn credential never appears in it."""
    ana = world.user("ana@example.com", admin=admin, credits_=250)
    world.user("root@example.com", admin=not admin)
    seen: list[Any] = []

    def think(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        returns = last_returns(messages) if len(messages) > 1 else []
        if not returns:
            return ModelResponse(parts=[ToolCallPart("my_account", {})])
        seen.append(returns[0].content)
        return ModelResponse(parts=[TextPart("ok")])

    web = Principal.web(ana)
    turn = say(world.rt, web, new_conversation(world.rt, web), think_with(think), text="me?")
    assert turn.status == "completed", turn.reply
    assert seen == [
        {
            "account": {
                "id": ana,
                "email": "ana@example.com",
                "display_name": seen[0]["account"]["display_name"],
                "is_admin": admin,
                "credits": 250,
            }
        }
    ]
    assert "bga_" not in json.dumps(seen)


@pytest.mark.parametrize(
    "text", ["how many credits do i have?", "what's my balance", "credits left?"]
)
def test_the_balance_is_told_and_buying_more_is_on_its_page(world: World, text: str) -> None:
    chat = Chat(world)
    world.do(OPERATOR, credits.grant_credits, chat.user, 120)
    turn = chat.say(text)
    assert (turn.status, turn.proposal, tools_used(turn)) == ("completed", None, ["my_account"])
    assert turn.reply.startswith("You have 120 credits."), turn.reply
    assert turn.reply.endswith(world.rt.settings.link("/settings/billing"))


@pytest.mark.parametrize("admin", [True, False])
def test_who_am_i_is_answered_from_the_account(world: World, admin: bool) -> None:
    chat = Chat(world)
    if admin:
        world.do(OPERATOR, users.set_admin, chat.user, True)
    turn = chat.say("who am i?")
    assert tools_used(turn) == ["my_account"]
    assert turn.reply.startswith("You are signed in as "), turn.reply
    assert "(ana@example.com)." in turn.reply
    assert ("You are an administrator" in turn.reply) is admin
    assert turn.reply.endswith(world.rt.settings.link("/settings/account"))


# --- 2. the leaderboard ---------------------------------------------------------------------


def _on_board(chat: Chat, benchmark: str, model: str) -> str:
    run = finished(chat, benchmark, model)
    chat.world.do(chat.web, leaderboards.add_to_leaderboard, run)
    return run


@pytest.mark.parametrize(
    "text",
    [
        "show the leaderboard of Colours",
        "what's on the leaderboard?",
        "show the leaderboard",
        "Colours leaderboard",
        "who is top of the {bm} leaderboard?",
    ],
)
def test_the_leaderboard_is_shown(world: World, text: str) -> None:
    chat = Chat(world)
    bm = chat.benchmark(MCQ)
    first = _on_board(chat, bm, FIRST)
    turn = chat.say(text.format(bm=bm))
    assert (turn.status, turn.proposal) == ("completed", None), turn.reply
    assert "show_leaderboard" in tools_used(turn)
    assert "I can't" not in turn.reply
    lines = turn.reply.splitlines()
    assert lines[0].startswith("Leaderboard of ") and bm in lines[0], turn.reply
    assert lines[1].startswith(f"1. Baseline: always the first choice — Accuracy 50.0% ({first}")
    assert (
        lines[-1]
        == f"The whole leaderboard: {world.rt.settings.link(f'/benchmarks/{bm}/leaderboard')}"
    )


def test_an_empty_leaderboard_says_how_runs_get_there(world: World) -> None:
    chat = Chat(world)
    bm = chat.benchmark()
    finished(chat, bm, RANDOM)  # finished, but never put on the leaderboard
    turn = chat.say("show the leaderboard of Capitals")
    assert turn.reply.startswith(f"No run is on the leaderboard of Capitals ({bm}) yet")
    assert turn.reply.endswith(f"/benchmarks/{bm}/leaderboard")


def test_an_unnamed_leaderboard_among_several_asks_which(world: World) -> None:
    chat = Chat(world)
    chat.benchmark()
    mcq = chat.benchmark(MCQ)
    first = _on_board(chat, mcq, FIRST)
    asked = chat.say("what's on the leaderboard?")
    assert asked.status == "awaiting_choice", asked.reply
    assert len(labels(asked)) == 2
    shown = chat.click(asked, mcq)
    assert f"1. Baseline: always the first choice — Accuracy 50.0% ({first}" in shown.reply


def test_another_users_private_leaderboard_is_not_read(world: World) -> None:
    owner = world.user("olga@example.com")
    private = world.benchmark(owner)
    turn = Chat(world).say(f"show the leaderboard of {private}")
    assert turn.reply.startswith("I could not read the leaderboard:"), turn.reply


# --- 3. a model that does not exist -----------------------------------------------------------


@pytest.mark.parametrize("text", ["run gpt-4 on capitals", "evaluate gpt-4 on Capitals"])
def test_a_model_that_does_not_exist_is_said_plainly(world: World, text: str) -> None:
    chat = Chat(world)
    bm = chat.benchmark()
    turn = chat.say(text)
    assert turn.status == "awaiting_choice" and turn.proposal is None, turn.reply
    assert turn.reply.startswith('There is no model called "gpt-4" here; these can run on'), (
        turn.reply
    )
    assert f"Run Baseline: seeded random ({RANDOM}) on Capitals ({bm})" in labels(turn)
    assert run_of(chat.click(turn, RANDOM)) == (bm, RANDOM)


@pytest.mark.parametrize("text", ["run something on capitals", "run it on capitals"])
def test_a_model_left_open_is_not_called_missing(world: World, text: str) -> None:
    chat = Chat(world)
    chat.benchmark()
    turn = chat.say(text)
    assert turn.reply.startswith("Which model should I run on Capitals"), turn.reply


def test_a_missing_model_on_an_unclear_benchmark_is_said_too(world: World) -> None:
    chat = Chat(world)
    chat.benchmark()
    chat.benchmark(MCQ)
    turn = chat.say("run gpt-4 on nothing i know")
    assert turn.reply.startswith('There is no model called "gpt-4" here. '), turn.reply


# --- 4. one question's answer --------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("what is the answer to question 1 of Capitals?", "Question 1 of Capitals"),
        ("What's the answer for q2 in {bm}", "Question 2 of Capitals"),
        ("tell me the answer to the last question of Capitals", "The last question of Capitals"),
        ("what is the answer to question 2?", "Question 2 of Capitals"),
    ],
)
def test_the_owner_is_told_a_questions_answer(world: World, text: str, said: str) -> None:
    chat = Chat(world)
    bm = chat.benchmark()
    turn = chat.say(text.format(bm=bm))
    assert (turn.status, turn.proposal) == ("completed", None), turn.reply
    head, answer = turn.reply.splitlines()
    assert head.startswith(f"{said} ({bm}): "), turn.reply
    expected = "Paris" if "1" in said else "Tokyo | Tōkyō"
    assert answer == f"Answer: {expected}"


def test_an_mcq_answer_names_its_choice(world: World) -> None:
    chat = Chat(world)
    chat.benchmark(MCQ)
    turn = chat.say("what is the answer to question 1 of Colours?")
    assert turn.reply.splitlines()[1] == "Answer: B) Blue"


def test_a_question_beyond_the_last_is_said(world: World) -> None:
    chat = Chat(world)
    chat.benchmark()
    turn = chat.say("what is the answer to question 7 of Capitals?")
    assert turn.reply.endswith("has 2 questions: there is no question 7."), turn.reply


def test_a_collaborator_is_told_the_answer(world: World) -> None:
    owner = world.user("olga@example.com")
    bm = world.benchmark(owner)
    chat = Chat(world, "cleo@example.com")
    world.collaborator(owner, bm, "cleo@example.com")
    turn = chat.say(f"what is the answer to question 1 of {bm}?")
    assert turn.reply.endswith("Answer: Paris"), turn.reply


def test_anyone_else_is_told_they_cannot_see_the_key(world: World) -> None:
    owner = world.user("olga@example.com")
    bm = world.benchmark(owner)
    world.do(Principal.web(owner), lifecycle.publish_benchmark, bm)
    turn = Chat(world).say("what is the answer to question 1 of Capitals?")
    assert turn.reply.startswith(f"Question 1 of Capitals ({bm}): Capital of France?"), turn.reply
    assert "I can't show you its answer" in turn.reply and "answer key" in turn.reply
    assert "Paris" not in turn.reply
