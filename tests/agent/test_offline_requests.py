"""The offline brain's evaluation requests through the real harness, on real benchmarks and runs:
comparing runs, explaining one result, runs on a subset, benchmark edits shown as validated
diffs (refused plainly once questions are frozen), listing runs, and A13 still refused."""

from __future__ import annotations

import json
from typing import Any

import pytest

from benchgen.agent.never import refusal
from benchgen.core.clock import ManualClock
from benchgen.core.context import Principal
from benchgen.core.permissions import Action
from benchgen.services.benchmarks import lifecycle
from benchgen.services.chat.conversations import TurnView
from benchgen.services.runs import compare, launch, leaderboards
from tests.agent.test_offline_planner import Chat, labels
from tests.services.test_compare import FIRST, RANDOM, TWELVE
from tests.services.test_runs import work_all
from tests.support import MCQ, QA, World


def calls(turn: TurnView, tool: str) -> list[dict[str, Any]]:
    """The arguments of each call of `tool` in the turn, as the tool passed them on."""
    return [json.loads(call["args"]) for call in turn.tool_calls if call["tool"] == tool]


def started(chat: Chat, benchmark: str, model: str) -> str:
    """A queued run, a second after the one before (so "newest first" is well defined)."""
    clock = chat.world.rt.clock
    assert isinstance(clock, ManualClock)
    clock.advance(seconds=1)
    return chat.world.do(chat.web, launch.start_run, benchmark, model).id


def finished(chat: Chat, benchmark: str, model: str) -> str:
    run = started(chat, benchmark, model)
    work_all(chat.world.rt)
    return run


def questions_of(chat: Chat, benchmark: str) -> list[dict[str, Any]]:
    return chat.world.do(chat.web, lifecycle.list_questions, benchmark)


# --- compare ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "compare my last two runs",
        "Please compare {a} and {b}",
        "is {b} better than {a}?",
        "how does {a} compare with {b}",
    ],
)
def test_compare_runs(world: World, text: str) -> None:
    chat = Chat(world)
    twelve = chat.benchmark(TWELVE)
    run_a = finished(chat, twelve, FIRST)
    run_b = finished(chat, twelve, RANDOM)
    expected = world.do(chat.web, compare.compare_runs, run_a, run_b)
    turn = chat.say(text.format(a=run_a, b=run_b))
    assert turn.status == "completed", turn.reply
    assert calls(turn, "compare_runs") == [{"run_a": run_a, "run_b": run_b}]
    assert f"{expected.accuracy_a:.1%} for {run_a}, {expected.accuracy_b:.1%} for {run_b}" in (
        turn.reply
    )
    difference = f"{expected.difference * 100:+.1f} points".replace("-", "−")
    assert f"Difference ({run_b} − {run_a}): {difference}; 95% interval" in turn.reply
    assert f"p = {expected.p_value:.3g}." in turn.reply
    significant = expected.p_value < 0.05
    assert ("is significant at the 0.05 level" in turn.reply) == significant
    assert ("not significant at the 0.05 level" in turn.reply) == (not significant)
    assert f"only {run_a} right: {expected.only_a}" in turn.reply


def test_compare_last_two_takes_finished_runs_only(world: World) -> None:
    chat = Chat(world)
    twelve = chat.benchmark(TWELVE)
    older = finished(chat, twelve, RANDOM)
    newer = finished(chat, twelve, FIRST)
    started(chat, twelve, RANDOM)  # queued: not comparable
    turn = chat.say("which of my last two runs is better? compare them")
    assert calls(turn, "list_runs") == [{"benchmark_id": None}]
    assert calls(turn, "compare_runs") == [{"run_a": older, "run_b": newer}]


def test_compare_a_significant_difference_says_which_is_better(world: World) -> None:
    chat = Chat(world)
    questions = [
        {"prompt": f"Pick {i}", "choices": ["yes", "no"], "answer": "A"} for i in range(12)
    ]
    easy = chat.benchmark({"title": "Easy", "format": "mcq", "questions": questions})
    echo = finished(chat, easy, "mdl_builtin_echo")  # answers no letter: all wrong
    first = finished(chat, easy, FIRST)  # always A: all right
    turn = chat.say(f"is {first} better than {echo}?")
    assert calls(turn, "compare_runs") == [{"run_a": echo, "run_b": first}]
    assert "0.0% for" in turn.reply and "100.0% for" in turn.reply
    assert f"significant at the 0.05 level: {first} is better" in turn.reply


def test_compare_needs_two_finished_runs(world: World) -> None:
    chat = Chat(world)
    finished(chat, chat.benchmark(TWELVE), FIRST)
    turn = chat.say("compare my last two runs")
    assert turn.status == "completed"
    assert "two finished runs, and you have 1 finished run" in turn.reply
    assert calls(turn, "compare_runs") == []


def test_the_last_two_runs_compared_are_of_one_benchmark(world: World) -> None:
    """The two newest runs overall were compared, and refused whenever they were on two
    benchmarks (the demo's usual case)."""
    chat = Chat(world)
    twelve = chat.benchmark(TWELVE)
    older = finished(chat, twelve, RANDOM)
    finished(chat, chat.benchmark(MCQ), FIRST)  # between the two, on another benchmark
    newer = finished(chat, twelve, FIRST)
    turn = chat.say("compare my last two runs")
    assert calls(turn, "compare_runs") == [{"run_a": older, "run_b": newer}]
    alone = finished(chat, chat.benchmark(MCQ), FIRST)
    turn = chat.say("compare my last two runs")
    assert calls(turn, "compare_runs") == [], turn.reply  # the newest is alone on its benchmark
    assert f"{alone}, is the only finished one" in turn.reply


def test_compare_runs_of_different_benchmarks_is_refused_plainly(world: World) -> None:
    chat = Chat(world)
    one = finished(chat, chat.benchmark(TWELVE), FIRST)
    other = finished(chat, chat.benchmark(MCQ), FIRST)
    turn = chat.say(f"compare {one} and {other}")
    assert turn.reply.startswith("I could not compare those runs:"), turn.reply
    assert "different benchmarks" in turn.reply


# --- explain ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "why was question 2 wrong in {run}?",
        "explain question 2 of my last run",
        "Why did my last run get q2 wrong?",
        "why was the 2nd question marked as wrong in {run}",
    ],
)
def test_explain_a_wrong_answer(world: World, text: str) -> None:
    chat = Chat(world)
    run = finished(chat, chat.benchmark(TWELVE), FIRST)
    turn = chat.say(text.format(run=run))
    assert turn.status == "completed", turn.reply
    assert calls(turn, "explain_result") == [{"run_id": run, "position": 1}]
    assert turn.reply.startswith(f'Question 2 of run {run}: "Question 1: pick one"')
    assert 'The model replied: "ANSWER: A"' in turn.reply
    assert 'Extracted answer: "A"' in turn.reply
    assert "Verdict: wrong." in turn.reply
    assert "Expected answer: B (beta 1)." in turn.reply


def test_explain_a_right_answer_says_so(world: World) -> None:
    chat = Chat(world)
    run = finished(chat, chat.benchmark(TWELVE), FIRST)
    turn = chat.say(f"explain question 1 of {run}")
    assert calls(turn, "explain_result") == [{"run_id": run, "position": 0}]
    assert "Verdict: correct." in turn.reply and "Expected answer: A (alpha 0)." in turn.reply


def test_explain_without_the_key_shows_no_verdict(world: World) -> None:
    owner = world.user("owner@example.com")
    benchmark = world.benchmark(owner, TWELVE)
    world.do(Principal.web(owner), lifecycle.publish_benchmark, benchmark)
    chat = Chat(world, "bob@example.com")
    run = finished(chat, benchmark, FIRST)
    turn = chat.say(f"why was question 2 wrong in {run}?")
    assert turn.status == "completed", turn.reply
    assert 'The model replied: "ANSWER: A"' in turn.reply
    assert "Only the benchmark's owner and collaborators" in turn.reply
    for hidden in ("Expected answer", "Verdict", "Extracted"):
        assert hidden not in turn.reply


def test_explain_a_question_the_run_does_not_have(world: World) -> None:
    chat = Chat(world)
    run = finished(chat, chat.benchmark(TWELVE), FIRST)
    turn = chat.say(f"why was question 40 wrong in {run}?")
    assert turn.reply.startswith("I could not explain that result:"), turn.reply
    assert "for question 40" in turn.reply


def test_explain_with_no_runs(world: World) -> None:
    turn = Chat(world).say("explain question 3 of my last run")
    assert "You have no runs yet" in turn.reply
    assert calls(turn, "explain_result") == []


# --- runs on a subset ------------------------------------------------------------------------

FIRST_5 = {"kind": "first", "n": 5}


@pytest.mark.parametrize(
    ("text", "subset", "shown"),
    [
        ("run {model} on 5 questions of Twelve", FIRST_5, "the first 5 questions"),
        ("Try first-choice on the first 5 of Twelve", FIRST_5, "the first 5 questions"),
        ("run first-choice on Twelve, first 5 questions only", FIRST_5, "the first 5 questions"),
        (
            "run first-choice on a random 4 of Twelve",
            {"kind": "random", "n": 4, "seed": 0},
            "4 random questions (seed 0)",
        ),
        (
            "run {model} on Twelve with 4 random questions, seed 7",
            {"kind": "random", "n": 4, "seed": 7},
            "4 random questions (seed 7)",
        ),
        (
            "run first-choice on the questions tagged three of Twelve",
            {"kind": "tags", "tags": ["three"]},
            "questions tagged three",
        ),
        (
            "please evaluate {model} on {bm}, only questions tagged group0 or three",
            {"kind": "tags", "tags": ["group0", "three"]},
            "questions tagged group0, three",
        ),
    ],
)
def test_run_on_a_subset(world: World, text: str, subset: dict[str, Any], shown: str) -> None:
    chat = Chat(world)
    twelve = chat.benchmark(TWELVE)
    turn = chat.say(text.format(model=FIRST, bm=twelve))
    assert turn.status == "awaiting_approval", turn.reply
    full = {"seed": 0, "tags": [], "n": None, **subset}
    assert calls(turn, "propose_run") == [
        {"benchmark_id": twelve, "model_id": FIRST, "subset": full}
    ]
    assert turn.proposal is not None
    assert turn.proposal.arguments["subset"] == full
    assert f"subset: {shown}" in turn.reply and "partial run" in turn.reply


@pytest.mark.parametrize(
    "text",
    ["run {model} on the first 0 questions of Twelve", "run {model} on a random 0 of Twelve"],
)
def test_a_subset_out_of_range_is_refused_saying_why(world: World, text: str) -> None:
    # The call is refused for its arguments before it runs: the reason reaches the user.
    chat = Chat(world)
    chat.benchmark(TWELVE)
    turn = chat.say(text.format(model=FIRST))
    assert (turn.status, turn.proposal, turn.buttons) == ("completed", None, [])
    assert turn.reply == (
        "I could not prepare that run: the number of questions must be at least 1 "
        "(you asked for 0). Nothing was done."
    ), turn.reply


def test_a_subset_survives_the_model_buttons(world: World) -> None:
    chat = Chat(world)
    twelve = chat.benchmark(TWELVE)
    turn = chat.say("run something on a random 3 of Twelve with seed 5")
    assert turn.status == "awaiting_choice", turn.reply
    assert f"Run Baseline: always the first choice ({FIRST}) on a random 3 with seed 5 of " in (
        " ".join(labels(turn))
    )
    proposed = chat.click(turn, FIRST)
    assert proposed.proposal is not None, proposed.reply
    assert proposed.proposal.arguments["subset"] == {
        "kind": "random",
        "n": 3,
        "seed": 5,
        "tags": [],
    }
    assert proposed.proposal.arguments["benchmark_id"] == twelve
    started = chat.approve(proposed)
    assert started.reply.startswith("Started run run_"), started.reply
    run = world.do(chat.web, launch.list_runs)[0]
    assert run.question_count == 3


def test_a_whole_run_has_no_subset(world: World) -> None:
    chat = Chat(world)
    twelve = chat.benchmark(TWELVE)
    turn = chat.say(f"run {FIRST} on {twelve}")
    assert calls(turn, "propose_run") == [{"benchmark_id": twelve, "model_id": FIRST}]


# --- edits -----------------------------------------------------------------------------------


def edit_of(turn: TurnView) -> dict[str, Any]:
    assert turn.status == "awaiting_approval", turn.reply
    assert turn.proposal is not None and turn.proposal.kind == "edit_benchmark", turn.reply
    change: dict[str, Any] = turn.proposal.arguments["change"]
    return change


@pytest.mark.parametrize(
    "text",
    [
        "rename Capitals to World capitals",
        'Please rename my capitals benchmark to "World capitals"',
        "change the title of {bm} to World capitals",
    ],
)
def test_rename(world: World, text: str) -> None:
    chat = Chat(world)
    bm = chat.benchmark()
    chat.benchmark(MCQ)
    turn = chat.say(text.format(bm=bm))
    change = {"title": "World capitals", "description": None}
    assert calls(turn, "propose_edit_benchmark") == [{"benchmark_id": bm, "change": change}]
    assert edit_of(turn)["title"] == "World capitals"
    assert 'Title: "Capitals" → "World capitals"' in turn.reply
    done = chat.approve(turn)
    assert done.status == "completed", done.reply
    assert world.do(chat.web, lifecycle.get_benchmark, bm).title == "World capitals"


@pytest.mark.parametrize(
    "text",
    [
        "rename Capitals to Space Quiz and publish it",
        "rename Capitals to Space Quiz, then publish it",
        "change the title of Capitals to Space Quiz and then publish it",
    ],
)
def test_a_second_request_is_not_glued_into_the_new_title(world: World, text: str) -> None:
    chat = Chat(world)
    bm = chat.benchmark()
    turn = chat.say(text)
    assert turn.status == "awaiting_choice" and turn.proposal is None, turn.reply
    assert "rename Capitals" in turn.reply and '"Space Quiz"' in turn.reply
    assert '"publish it"' in turn.reply and "one request at a time" in turn.reply
    assert labels(turn) == [f'Rename {bm} to "Space Quiz"']
    proposed = chat.click(turn, "Rename")
    assert edit_of(proposed)["title"] == "Space Quiz", proposed.reply
    chat.approve(proposed)
    assert world.do(chat.web, lifecycle.get_benchmark, bm).title == "Space Quiz"


def test_a_title_with_and_in_it_is_kept_whole(world: World) -> None:
    chat = Chat(world)
    chat.benchmark()
    turn = chat.say("rename Capitals to Rivers and Lakes")
    assert edit_of(turn)["title"] == "Rivers and Lakes", turn.reply


@pytest.mark.parametrize(
    "text",
    [
        "change the description of Capitals to Capital cities of the world.",
        "set Capitals's description to Capital cities of the world.",
        "describe Capitals as Capital cities of the world.",
    ],
)
def test_change_description(world: World, text: str) -> None:
    chat = Chat(world)
    bm = chat.benchmark()
    turn = chat.say(text)
    assert edit_of(turn)["description"] == "Capital cities of the world."
    assert "Description:" in turn.reply and '"Capital cities of the world."' in turn.reply
    assert calls(turn, "propose_edit_benchmark")[0]["benchmark_id"] == bm


@pytest.mark.parametrize(
    "text",
    [
        "add these questions to Capitals:\nQ: Capital of Italy?\nA: Rome",
        "Please add 1 question to my Capitals benchmark: Q: Capital of Italy? A: Rome",
        "add to {bm} the following questions:\n1. Capital of Italy?\nAnswer: Rome",
    ],
)
def test_add_questions(world: World, text: str) -> None:
    chat = Chat(world)
    bm = chat.benchmark()
    turn = chat.say(text.format(bm=bm))
    assert calls(turn, "show_benchmark") == [{"benchmark_id": bm, "offset": 0, "limit": 50}]
    prompts = [q["prompt"] for q in edit_of(turn)["questions"]]
    assert prompts == ["Capital of France?", "Capital of Japan?", "Capital of Italy?"]
    assert "Question 3 is added:" in turn.reply and "version 1 → 2" in turn.reply
    chat.approve(turn)
    assert [q["answer"] for q in questions_of(chat, bm)] == [
        ["Paris"],
        ["Tokyo", "Tōkyō"],
        ["Rome"],
    ]


def test_add_mcq_questions_keeps_choices_and_tags(world: World) -> None:
    chat = Chat(world)
    colours = chat.benchmark({**MCQ, "questions": [{**MCQ["questions"][0], "tags": ["sky"]}]})
    turn = chat.say(
        "add this question to Colours:\n1. Colour of snow?\na) White\nb) Black\nAnswer: a"
    )
    added = edit_of(turn)["questions"]
    assert added[0] == {
        "prompt": "Colour of the sky?",
        "choices": ["Green", "Blue", "Red"],
        "answer": "B",
        "tags": ["sky"],
        "metadata": {},
    }
    assert added[1]["choices"] == ["White", "Black"] and added[1]["answer"] == "A"
    assert "Question 1" not in turn.reply  # the first question is kept as it was
    assert calls(turn, "propose_edit_benchmark")[0]["benchmark_id"] == colours


def test_add_questions_of_the_wrong_format(world: World) -> None:
    chat = Chat(world)
    chat.benchmark(MCQ)
    turn = chat.say("add these questions to Colours:\nQ: Colour of snow?\nA: White")
    assert turn.status == "completed"
    assert "is a mcq benchmark" in turn.reply and "Nothing was proposed" in turn.reply
    assert calls(turn, "propose_edit_benchmark") == []


def test_add_questions_without_questions_says_how(world: World) -> None:
    chat = Chat(world)
    chat.benchmark()
    turn = chat.say("add more questions to Capitals")
    assert turn.reply.startswith("Write the questions in the same message")
    assert turn.tool_calls == []


def test_replace_questions(world: World) -> None:
    chat = Chat(world)
    bm = chat.benchmark()
    turn = chat.say("replace the questions of Capitals with:\nQ: Capital of Peru?\nA: Lima")
    assert calls(turn, "show_benchmark") == []
    assert edit_of(turn)["questions"] == [
        {
            "prompt": "Capital of Peru?",
            "choices": None,
            "answer": ["Lima"],
            "tags": [],
            "metadata": {},
        }
    ]
    assert "1 questions after the change" in turn.reply
    chat.approve(turn)
    assert [q["prompt"] for q in questions_of(chat, bm)] == ["Capital of Peru?"]


@pytest.mark.parametrize(
    ("text", "left"),
    [
        ("remove question 1 from Capitals", ["Capital of Japan?"]),
        ("please delete question 2 from {bm}", ["Capital of France?"]),
        ("remove the last question from my Capitals benchmark", ["Capital of France?"]),
        ("drop the first question from Capitals", ["Capital of Japan?"]),
    ],
)
def test_remove_questions(world: World, text: str, left: list[str]) -> None:
    chat = Chat(world)
    bm = chat.benchmark()
    turn = chat.say(text.format(bm=bm))
    assert "I can't" not in turn.reply, turn.reply
    assert [q["prompt"] for q in edit_of(turn)["questions"]] == left
    assert "is removed:" in turn.reply
    chat.approve(turn)
    assert [q["prompt"] for q in questions_of(chat, bm)] == left
    assert world.do(chat.web, lifecycle.get_benchmark, bm).visibility == "private"


def test_remove_a_question_that_is_not_there(world: World) -> None:
    chat = Chat(world)
    chat.benchmark()
    turn = chat.say("remove question 3 from Capitals")
    assert turn.status == "completed"
    assert "has 2 questions: there is no question 3. Nothing was proposed." in turn.reply


def test_remove_pages_through_every_question(world: World) -> None:
    chat = Chat(world)
    many = [{"prompt": f"Question {i}?", "answer": str(i)} for i in range(1, 121)]
    bm = chat.benchmark({"title": "Many", "format": "qa", "questions": many})
    turn = chat.say("remove questions 55 and 120 from Many")
    offsets = sorted(args["offset"] for args in calls(turn, "show_benchmark"))
    assert offsets == [0, 50, 100]
    left = [q["prompt"] for q in edit_of(turn)["questions"]]
    assert len(left) == 118 and "Question 55?" not in left and "Question 120?" not in left
    assert left[53:55] == ["Question 54?", "Question 56?"]
    assert turn.proposal is not None and turn.proposal.arguments["benchmark_id"] == bm


@pytest.mark.parametrize(
    "text",
    [
        "remove question 1 from Capitals",
        "add these questions to Capitals:\nQ: Capital of Italy?\nA: Rome",
        "replace the questions of Capitals with:\nQ: Capital of Peru?\nA: Lima",
    ],
)
def test_frozen_questions_are_refused_plainly(world: World, text: str) -> None:
    chat = Chat(world)
    bm = chat.benchmark()
    finished(chat, bm, RANDOM)
    turn = chat.say(text)
    assert turn.status == "completed", turn.reply
    assert turn.proposal is None
    assert turn.reply.startswith("I could not prepare that change: The questions and answer key")
    assert "frozen" in turn.reply and "already has a run" in turn.reply
    assert len(questions_of(chat, bm)) == 2


def test_a_frozen_benchmark_can_still_be_renamed(world: World) -> None:
    chat = Chat(world)
    bm = chat.benchmark()
    finished(chat, bm, RANDOM)
    turn = chat.say("rename Capitals to Capitals 2")
    assert edit_of(turn)["title"] == "Capitals 2"
    assert turn.proposal is not None and turn.proposal.arguments["benchmark_id"] == bm


def test_edit_of_an_unknown_benchmark_lists_the_users_own(world: World) -> None:
    chat = Chat(world)
    bm = chat.benchmark()
    turn = chat.say("rename Planets to Moons")
    assert turn.status == "completed"
    assert 'no single benchmark of yours called "Planets"' in turn.reply
    assert f"- Capitals ({bm})" in turn.reply
    assert calls(turn, "propose_edit_benchmark") == []


def test_edit_of_someone_elses_benchmark_is_refused_by_the_platform(world: World) -> None:
    chat = Chat(world)
    theirs = world.benchmark(world.user("bob@example.com"))
    turn = chat.say(f"rename {theirs} to Mine now")
    assert turn.reply.startswith("I could not prepare that change:"), turn.reply
    assert turn.proposal is None


# --- listing runs ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text", ["what runs have I done?", "list my runs", "Which runs did I do?", "show my runs"]
)
def test_list_runs_lists_the_runs_that_exist(world: World, text: str) -> None:
    chat = Chat(world)
    capitals = chat.benchmark(QA)
    colours = chat.benchmark(MCQ)
    done = finished(chat, colours, FIRST)
    queued = started(chat, capitals, RANDOM)
    turn = chat.say(text)
    assert turn.status == "completed", turn.reply
    assert calls(turn, "list_runs") == [{"benchmark_id": None}]
    lines = turn.reply.splitlines()
    assert lines[0] == "Your runs, newest first:" and len(lines) == 3
    assert lines[1].startswith(f"- {queued}: Baseline: seeded random on {capitals} — queued")
    assert lines[2].startswith(f"- {done}: Baseline: always the first choice on {colours}")
    assert "completed, 2/2 done, accuracy 50% (1 of 2 correct" in lines[2]
    assert "corrected by hand" not in turn.reply


def test_a_run_whose_score_was_corrected_says_so_beside_its_computed_accuracy(
    world: World,
) -> None:
    """The agent quoted the computed accuracy while the leaderboard showed the correction."""
    chat = Chat(world)
    done = finished(chat, chat.benchmark(MCQ), FIRST)
    chat.world.do(chat.web, leaderboards.edit_run_score, done, {"accuracy": 0.9}, "key fixed")
    line = chat.say("list my runs").reply.splitlines()[1]
    assert "accuracy 50% (1 of 2 correct" in line
    assert line.endswith("its official score was corrected by hand to 90%")


@pytest.mark.parametrize(
    "text",
    ["show my runs on Capitals", "list my runs of {bm}", "what runs have I done on capitals?"],
)
def test_list_runs_on_one_benchmark(world: World, text: str) -> None:
    chat = Chat(world)
    capitals = chat.benchmark(QA)
    colours = chat.benchmark(MCQ)
    finished(chat, colours, FIRST)
    mine = started(chat, capitals, RANDOM)
    turn = chat.say(text.format(bm=capitals))
    assert calls(turn, "list_runs") == [{"benchmark_id": capitals}]
    assert mine in turn.reply and colours not in turn.reply


@pytest.mark.parametrize("text", ["what runs have I done?", "show my runs on Capitals"])
def test_list_runs_when_there_are_none(world: World, text: str) -> None:
    chat = Chat(world)
    chat.benchmark()
    turn = chat.say(text)
    assert turn.reply.startswith("You have no runs yet"), turn.reply


# --- A13 still refused -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "target"),
    [
        ("delete my benchmark", ""),
        ("delete Capitals", "bm"),
        ("please remove {bm}", "bm"),
        ("delete my Capitals benchmark and its questions", "bm"),
    ],
)
def test_deleting_a_benchmark_is_still_refused(world: World, text: str, target: str) -> None:
    chat = Chat(world)
    bm = chat.benchmark()
    turn = chat.say(text.format(bm=bm))
    assert turn.reply == refusal(world.rt.settings, Action.BENCHMARK_DELETE, bm if target else "")
    assert turn.proposal is None
    assert len(questions_of(chat, bm)) == 2
