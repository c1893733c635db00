"""The offline brain on what new users wrote and it misread: titles holding request words
("Leaderboard Basics", "Status Quo"), titles in other scripts or with accents, counts written as
words, parts of a benchmark no subset can be, two requests in one message, and greetings."""

from __future__ import annotations

import pytest

from tests.agent.test_offline_planner import Chat, labels, run_of, tools_used
from tests.agent.test_offline_requests import calls
from tests.services.test_compare import RANDOM
from tests.support import QA, World


def titled(chat: Chat, title: str) -> str:
    return chat.benchmark({**QA, "title": title})


def shown(turn_tools: list[str], turn_calls: list[dict[str, str]]) -> str:
    assert turn_tools[-1] == "show_benchmark", turn_tools
    return turn_calls[-1]["benchmark_id"]


# --- 1. a known title wins over the request words it holds -----------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "show Leaderboard Basics",
        "Leaderboard Basics",
        'show "Leaderboard Basics"',
        "how many questions does Leaderboard Basics have?",
        "show Status Quo",
        "Status Quo",
        "how many questions in Status Quo?",
    ],
)
def test_a_title_holding_a_request_word_is_shown(world: World, text: str) -> None:
    chat = Chat(world)
    chat.benchmark(QA)
    wanted = {
        "Leaderboard": titled(chat, "Leaderboard Basics"),
        "Status": titled(chat, "Status Quo"),
    }
    turn = chat.say(text)
    assert turn.status == "completed", turn.reply
    benchmark = next(bm for word, bm in wanted.items() if word in text)
    assert shown(tools_used(turn), calls(turn, "show_benchmark")) == benchmark
    assert "show_leaderboard" not in tools_used(turn) and "run_status" not in tools_used(turn)


@pytest.mark.parametrize(
    "text",
    [
        "run random on Status Quo",
        'Run random on "Status Quo"',
        "run random on Leaderboard Basics",
        "run random on my leaderboard basics quiz",
    ],
)
def test_a_run_on_a_title_holding_a_request_word_is_proposed(world: World, text: str) -> None:
    chat = Chat(world)
    chat.benchmark(QA)
    wanted = titled(chat, "Status Quo" if "status" in text.casefold() else "Leaderboard Basics")
    turn = chat.say(text)
    assert run_of(turn) == (wanted, RANDOM)
    assert tools_used(turn).count("list_benchmarks") == 1


def test_runs_on_a_title_holding_leaderboard_are_listed(world: World) -> None:
    chat = Chat(world)
    chat.benchmark(QA)
    basics = titled(chat, "Leaderboard Basics")
    turn = chat.say("show my runs on Leaderboard Basics")
    assert calls(turn, "list_runs") == [{"benchmark_id": basics}], turn.reply


def test_the_leaderboard_words_still_read_the_leaderboard(world: World) -> None:
    chat = Chat(world)
    basics = titled(chat, "Leaderboard Basics")
    turn = chat.say("show the leaderboard of Leaderboard Basics")
    assert calls(turn, "show_leaderboard") == [{"benchmark_id": basics, "limit": 10}]
    assert turn.reply.startswith(f"No run is on the leaderboard of Leaderboard Basics ({basics})")


def test_is_it_done_lists_no_benchmarks(world: World) -> None:
    chat = Chat(world)
    titled(chat, "Status Quo")
    turn = chat.say("is it done?")
    assert tools_used(turn) == ["run_status", "training_status"]


# --- 2. titles in other scripts, with accents --------------------------------------------------


@pytest.mark.parametrize(
    ("title", "typed"),
    [
        ("日本語テスト", "日本語テスト"),
        ("Café Français", "cafe francais"),
        ("Ελληνικά", "ελληνικα"),
    ],
)
def test_a_title_in_any_script_is_named(world: World, title: str, typed: str) -> None:
    chat = Chat(world)
    chat.benchmark(QA)
    wanted = titled(chat, title)
    turn = chat.say(f"show {typed}")
    assert shown(tools_used(turn), calls(turn, "show_benchmark")) == wanted, turn.reply
    assert run_of(chat.say(f"run random on {typed}")) == (wanted, RANDOM)


# --- 3. the part of a benchmark a run asks ----------------------------------------------------


@pytest.mark.parametrize(
    ("text", "subset"),
    [
        ("run random on the first three questions of Capitals", {"kind": "first", "n": 3}),
        ("run random on Capitals, first twenty-five questions", {"kind": "first", "n": 25}),
        ("run random on a random five of Capitals", {"kind": "random", "n": 5, "seed": 0}),
        (
            "run random on a dozen random questions of Capitals",
            {"kind": "random", "n": 12, "seed": 0},
        ),
    ],
)
def test_a_count_in_words_is_read(world: World, text: str, subset: dict[str, object]) -> None:
    chat = Chat(world)
    chat.benchmark(QA)
    turn = chat.say(text)
    assert subset.items() <= calls(turn, "propose_run")[0]["subset"].items(), turn.reply


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("run random on the last 2 questions of Capitals", '"last 2 questions"'),
        ("run random on the last three of Capitals", '"last three of"'),
        ("run random on half of Capitals", '"half of"'),
        ("run random on 10% of Capitals", '"10%"'),
        ("run random on a few questions of Capitals", '"few questions"'),
    ],
)
def test_a_part_no_subset_can_be_is_said_back(world: World, text: str, said: str) -> None:
    chat = Chat(world)
    chat.benchmark(QA)
    turn = chat.say(text)
    assert (turn.status, turn.proposal) == ("completed", None)
    assert turn.reply.startswith(f"I could not read that subset: {said}"), turn.reply


def test_a_title_with_last_in_it_is_no_subset(world: World) -> None:
    chat = Chat(world)
    wanted = titled(chat, "Last Five Minutes")
    assert run_of(chat.say("run random on Last Five Minutes")) == (wanted, RANDOM)


# --- 4. two requests, greetings ----------------------------------------------------------------


def test_a_run_and_a_second_request_offers_the_run_and_says_the_rest(world: World) -> None:
    chat = Chat(world)
    capitals = chat.benchmark(QA)
    turn = chat.say("run random on capitals and then publish it")
    assert turn.status == "awaiting_choice" and turn.proposal is None
    assert '"publish it"' in turn.reply and "one request at a time" in turn.reply
    assert labels(turn) == [f"Run Baseline: seeded random ({RANDOM}) on Capitals ({capitals})"]
    assert run_of(chat.click(turn, "Run ")) == (capitals, RANDOM)


@pytest.mark.parametrize(
    "text",
    ["run random on Capitals and show me the results", "run random on Capitals and check it"],
)
def test_asking_for_the_runs_outcome_proposes_the_run(world: World, text: str) -> None:
    chat = Chat(world)
    capitals = chat.benchmark(QA)
    assert run_of(chat.say(text)) == (capitals, RANDOM)


def test_the_second_request_keeps_the_subset_on_the_button(world: World) -> None:
    chat = Chat(world)
    capitals = chat.benchmark(QA)
    turn = chat.say("run random on the first one question of Capitals and publish Capitals")
    chosen = chat.click(turn, "Run ")
    assert run_of(chosen) == (capitals, RANDOM)
    assert {"kind": "first", "n": 1}.items() <= calls(chosen, "propose_run")[0]["subset"].items()


@pytest.mark.parametrize("text", ["Hello! What can you do?", "what can u do", "Hi! help"])
def test_greetings_with_punctuation_get_the_help(world: World, text: str) -> None:
    turn = Chat(world).say(text)
    assert turn.reply.startswith("I am BenchGen's offline assistant."), turn.reply


# --- 6. how a name that matched several is quoted back ------------------------------------------


@pytest.mark.parametrize(
    ("titles", "text", "quoted"),
    [
        (["Sums", "Sums"], "show benchmark Sums", '"Sums"'),
        (["Sums", "Sums"], "show the benchmark called Sums", '"Sums"'),
        # A title that holds the word keeps it in the quote.
        (["Benchmark Sums", "Benchmark Sums"], "show benchmark Sums", '"benchmark Sums"'),
    ],
)
def test_the_name_asked_for_is_quoted_without_the_word_benchmark(
    world: World, titles: list[str], text: str, quoted: str
) -> None:
    chat = Chat(world)
    for title in titles:
        titled(chat, title)
    turn = chat.say(text)
    assert f"no single benchmark called {quoted}" in turn.reply, turn.reply
