"""The offline brain on what new users wrote and it misread: a title held in another one, run
settings written among the names, requests the agent must refuse or send to a page, and a
model named by a word only its name has."""

from __future__ import annotations

from typing import Any

import pytest

from benchgen.services.chat.conversations import TurnView
from tests.agent.test_offline_planner import Chat, labels, run_of
from tests.agent.test_offline_requests import calls, finished, started
from tests.services.test_compare import FIRST, RANDOM, TWELVE
from tests.support import QA, World

DEMO = {**QA, "title": "World Capitals and Geography (demo)"}


def settings_of(turn: TurnView) -> dict[str, Any]:
    """The settings the planner passed on (the baselines then refuse temperature plainly)."""
    proposed = calls(turn, "propose_run")
    assert len(proposed) == 1, turn.reply
    return dict(proposed[0].get("settings") or {})


# --- 1. a title held in another one ----------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "run random on world capitals",
        "run random on World Capitals and Geography",
        "run random on world capitals (demo)",
        "run baseline seeded random on the first 2 questions of World Capitals and Geography",
    ],
)
def test_the_title_that_covers_the_request_wins(world: World, text: str) -> None:
    chat = Chat(world)
    chat.benchmark(QA)
    demo = chat.benchmark(DEMO)
    turn = chat.say(text)
    assert run_of(turn) == (demo, RANDOM)


def test_an_exact_title_wins_over_a_longer_one(world: World) -> None:
    chat = Chat(world)
    capitals = chat.benchmark(QA)
    chat.benchmark(DEMO)
    assert run_of(chat.say("run random on capitals")) == (capitals, RANDOM)


def test_two_titles_that_match_equally_are_offered(world: World) -> None:
    chat = Chat(world)
    quiz = chat.benchmark({**QA, "title": "World Capitals Quiz"})
    demo = chat.benchmark(DEMO)
    turn = chat.say("run random on world capitals")
    assert turn.status == "awaiting_choice", turn.reply
    assert any(quiz in label for label in labels(turn)), labels(turn)
    assert any(demo in label for label in labels(turn)), labels(turn)


def test_a_title_sharing_more_words_is_offered_beside_a_whole_one(world: World) -> None:
    chat = Chat(world)
    capitals = chat.benchmark(QA)
    demo = chat.benchmark(DEMO)
    turn = chat.say("run random on world capitals quiz")
    assert turn.status == "awaiting_choice", turn.reply
    assert [label for label in labels(turn) if capitals in label or demo in label] == labels(turn)
    assert len(labels(turn)) == 2, labels(turn)


# --- 2. run settings -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "run random on {bm}, first 5 questions, 3 samples, temp 0.2",
        "run random on {bm} with 3 samples and temperature 0.2 on the first 5 questions",
        "run random on the first 5 questions of {bm} with 3 samples and temperature 0.2",
    ],
)
def test_run_settings_and_subset_are_read_anywhere(world: World, text: str) -> None:
    chat = Chat(world)
    twelve = chat.benchmark(TWELVE)
    turn = chat.say(text.format(bm=twelve))
    proposed = calls(turn, "propose_run")
    assert [(p["benchmark_id"], p["model_id"], p["subset"]["n"]) for p in proposed] == [
        (twelve, RANDOM, 5)
    ], turn.reply
    assert settings_of(turn) | {"samples": 3, "temperature": 0.2} == settings_of(turn)
    # The platform's own rule is said back, never a silent default.
    assert "do not take temperature" in turn.reply, turn.reply


def test_other_run_settings_are_read(world: World) -> None:
    chat = Chat(world)
    twelve = chat.benchmark(TWELVE)
    turn = chat.say(f"run random on {twelve}, max tokens 256, top p 0.9, 2-shot")
    wanted = {"max_tokens": 256, "top_p": 0.9, "few_shot": 2}
    assert settings_of(turn) | wanted == settings_of(turn)


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("run random on {bm} with three samples", "samples"),
        ("run random on {bm} at temperature hot", "temperature"),
        ("run random on {bm} with a system prompt saying be brief", "system prompt"),
    ],
)
def test_a_setting_that_cannot_be_read_is_said_not_dropped(
    world: World, text: str, named: str
) -> None:
    chat = Chat(world)
    twelve = chat.benchmark(TWELVE)
    turn = chat.say(text.format(bm=twelve))
    assert (turn.status, turn.proposal) == ("completed", None), turn.reply
    assert f"I could not read the {named}" in turn.reply, turn.reply


def test_run_settings_survive_the_model_buttons(world: World) -> None:
    chat = Chat(world)
    twelve = chat.benchmark(TWELVE)
    turn = chat.say("run something on Twelve with 3 samples")
    assert turn.status == "awaiting_choice", turn.reply
    assert any("with 3 samples on Twelve" in label for label in labels(turn)), labels(turn)
    proposed = chat.click(turn, FIRST)
    assert run_of(proposed) == (twelve, FIRST)
    assert settings_of(proposed)["samples"] == 3
    assert calls(proposed, "propose_run")[0]["settings"]["samples"] == 3


# --- 3. requests the agent cannot carry out --------------------------------------------------


@pytest.mark.parametrize(
    ("text", "said", "page"),
    [
        ("give me 1000 credits", "I can't handle billing", "/settings/billing"),
        ("whats my token?", "I can't create, read or revoke API tokens", "/settings/tokens"),
        ("change my password", "I can't change or show your password", "/settings/account"),
    ],
)
def test_account_requests_are_answered_with_their_page(
    world: World, text: str, said: str, page: str
) -> None:
    turn = Chat(world).say(text)
    assert (turn.status, turn.proposal) == ("completed", None), turn.reply
    assert turn.reply.startswith(said), turn.reply
    assert world.rt.settings.link(page) in turn.reply, turn.reply


@pytest.mark.parametrize(
    "text",
    ["cancel it", "stop the run please", "cancel my last run", "retry the errors of my last run"],
)
def test_cancelling_a_run_sends_to_its_page(world: World, text: str) -> None:
    chat = Chat(world)
    run = started(chat, chat.benchmark(TWELVE), FIRST)
    turn = chat.say(text)
    assert (turn.status, turn.proposal) == ("completed", None), turn.reply
    assert turn.reply.startswith("I can't "), turn.reply
    assert world.rt.settings.link(f"/runs/{run}") in turn.reply, turn.reply


def test_cancel_with_no_run_in_progress_does_nothing(world: World) -> None:
    chat = Chat(world)
    finished(chat, chat.benchmark(TWELVE), FIRST)
    turn = chat.say("cancel it")
    assert turn.reply.startswith("No run of yours is in progress"), turn.reply


def test_changing_the_scoring_sends_to_the_benchmarks_scoring_page(world: World) -> None:
    chat = Chat(world)
    capitals = chat.benchmark(QA)
    turn = chat.say("change the scoring of Capitals to f1")
    assert turn.reply.startswith("I can't change a benchmark's scoring"), turn.reply
    assert world.rt.settings.link(f"/benchmarks/{capitals}/settings/scoring") in turn.reply


# --- 4. the preview's "agent picked" follows the planner's own reading -----------------------


@pytest.mark.parametrize(
    ("text", "model"),
    [
        ("run random on Twelve", RANDOM),
        ("run first choice on the first 2 questions of Twelve", FIRST),
    ],
)
def test_a_model_the_planner_read_by_name_is_not_the_agents_pick(
    world: World, text: str, model: str
) -> None:
    chat = Chat(world)
    twelve = chat.benchmark(TWELVE)
    turn = chat.say(text)
    assert run_of(turn) == (twelve, model)
    assert turn.proposal is not None and turn.proposal.preview["agent_pick"] is False
    assert "agent picked this model" not in turn.reply, turn.reply
