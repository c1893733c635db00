"""The offline brain as a new user meets it: a title followed by a second request, questions
pasted as `France: Paris` lines or a `|` table, an answer changed by the question's number,
what only an administrator can do, and the everyday wordings (typos, thanks, "how do I …?")."""

from __future__ import annotations

from typing import Any

import pytest

from benchgen.services.benchmarks import lifecycle
from tests.agent.test_offline_planner import Chat, labels, run_of, tools_used
from tests.agent.test_offline_requests import calls, edit_of, finished, questions_of
from tests.services.test_compare import RANDOM
from tests.support import MCQ, QA, World


def created(chat: Chat, text: str) -> dict[str, Any]:
    """The arguments of the create proposal the message led to."""
    turn = chat.say(text)
    assert turn.status == "awaiting_approval", turn.reply
    assert turn.proposal is not None and turn.proposal.kind == "create_benchmark", turn.reply
    return dict(turn.proposal.arguments)


# --- 1. a title followed by a second request ------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "create a benchmark called Space Quiz and run random on it",
        'create a benchmark called "Space Quiz" and run random on it',
        "Please create a quiz named Space Quiz, then run random on it.",
    ],
)
def test_a_second_request_is_not_glued_into_the_title_at_creation(world: World, text: str) -> None:
    chat = Chat(world)
    asked = chat.say(text)
    assert asked.reply.startswith("Which questions should the benchmark have?"), asked.reply
    assert 'You also asked "run random on it"' in asked.reply
    assert "one request at a time" in asked.reply
    arguments = created(chat, "Q: 2+2?\nA: 4")
    assert arguments["title"] == "Space Quiz"


def test_a_second_request_after_a_title_with_questions_offers_the_creation_alone(
    world: World,
) -> None:
    chat = Chat(world)
    chat.benchmark()
    turn = chat.say("create a benchmark called Space Quiz and run random on it:\nQ: 2+2?\nA: 4")
    assert turn.status == "awaiting_choice" and turn.proposal is None, turn.reply
    assert 'create "Space Quiz" with 1 qa question, and "run random on it"' in turn.reply
    assert labels(turn) == ['Create "Space Quiz" from the 1 question you wrote']
    proposed = chat.click(turn, "Create")
    assert proposed.proposal is not None, proposed.reply
    assert proposed.proposal.arguments["title"] == "Space Quiz"
    assert proposed.proposal.arguments["questions"][0]["prompt"] == "2+2?"
    assert "propose_run" not in tools_used(proposed)
    done = chat.approve(proposed)
    assert done.reply.startswith("Created benchmark bm_"), done.reply
    bm = next(
        b.id
        for b in world.do(chat.web, lifecycle.list_benchmarks, mine_only=True)
        if b.title == "Space Quiz"
    )
    assert run_of(chat.say("run random on it: Space Quiz"))[0] == bm


@pytest.mark.parametrize(
    ("text", "title"),
    [
        ("create a benchmark called Science and Nature:\nQ: 2+2?\nA: 4", "Science and Nature"),
        ("create a quiz called Build and Run:\nQ: 2+2?\nA: 4", "Build and Run"),
        ('create a benchmark called "Make and Model":\nQ: 2+2?\nA: 4', "Make and Model"),
        (
            "create a benchmark called Space Quiz and add these questions:\nQ: 2+2?\nA: 4",
            "Space Quiz",
        ),
    ],
)
def test_a_title_holding_and_is_kept_whole(world: World, text: str, title: str) -> None:
    assert created(Chat(world), text)["title"] == title


def test_a_renamed_title_with_a_capitalised_verb_is_kept_whole(world: World) -> None:
    chat = Chat(world)
    chat.benchmark()
    assert edit_of(chat.say("rename Capitals to Compile and Run"))["title"] == "Compile and Run"


# --- 2. questions pasted as `France: Paris` lines or a `|` table -----------------------------

CAPITALS = [["Paris"], ["Rome"]]


@pytest.mark.parametrize(
    "text",
    [
        "create a benchmark called Capitals with these questions:\nFrance: Paris\nItaly: Rome",
        "Title: Capitals\nFrance: Paris\nItaly: Rome",
        "create a benchmark called Capitals:\n1. France: Paris\n2. Italy: Rome",
        "create a benchmark called Capitals\nquestion | answer\nFrance | Paris\nItaly | Rome",
        "create a benchmark called Capitals\n| Question | Answer |\n|---|---|\n| France | Paris |"
        "\n| Italy | Rome |",
        "create a benchmark called Capitals:\nFrance | Paris\nItaly | Rome",
    ],
)
def test_colon_and_bar_pairs_are_read_as_questions(world: World, text: str) -> None:
    arguments = created(Chat(world), text)
    assert arguments["title"] == "Capitals"
    assert [q["prompt"] for q in arguments["questions"]] == ["France", "Italy"]
    assert [q["answer"] for q in arguments["questions"]] == CAPITALS


def test_pairs_alone_are_read_when_several_open_the_message(world: World) -> None:
    chat = Chat(world)
    asked = chat.say("France: Paris\nItaly: Rome\nJapan | Tokyo | Tōkyō")
    assert asked.reply.startswith("What should the benchmark be called? I read 3 qa questions")
    arguments = created(chat, "Capitals")
    assert arguments["questions"][2]["answer"] == ["Tokyo", "Tōkyō"]


@pytest.mark.parametrize(
    "text",
    [
        "Note: this is a test of the agent.",
        "Note: keep it short\nReminder: be nice",
        "France: Paris",
        "run random on Capitals\nsamples: 3\nseed: 4",
        "I have a question: what can you do for me in this app today?",
        "compare run_a | run_b",
    ],
)
def test_prose_with_a_colon_or_a_bar_is_not_a_question(world: World, text: str) -> None:
    chat = Chat(world)
    chat.benchmark()
    turn = chat.say(text)
    assert "propose_create_benchmark" not in tools_used(turn), turn.reply
    assert "What should the benchmark be called" not in turn.reply, turn.reply


def test_a_remark_after_pairs_is_named_not_read(world: World) -> None:
    text = (
        "create a benchmark called Capitals:\nFrance: Paris\nNote: answers are short.\nItaly: Rome"
    )
    turn = Chat(world).say(text)
    assert turn.proposal is None, turn.reply
    assert "could not be read as questions: line 3 (Note: answers are short.)" in turn.reply


def test_a_note_after_a_create_request_is_not_a_question(world: World) -> None:
    turn = Chat(world).say("create a benchmark called Capitals\nNote: questions come later")
    assert turn.reply.startswith("Which questions should the benchmark have?"), turn.reply


# --- 3. changing one question's answer -------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "change the answer of question 2 of Capitals to Kyoto",
        "set question 2's answer in {bm} to Kyoto",
        "the answer to question 2 of Capitals should be Kyoto",
        "Please change the correct answer of the second question in capitals to 'Kyoto'.",
        "the answer to the last question of Capitals should be Kyoto",
    ],
)
def test_change_one_answer(world: World, text: str) -> None:
    chat = Chat(world)
    bm = chat.benchmark()
    chat.benchmark(MCQ)
    turn = chat.say(text.format(bm=bm))
    assert calls(turn, "show_benchmark") == [{"benchmark_id": bm, "offset": 0, "limit": 50}]
    changed = edit_of(turn)["questions"]
    assert [q["answer"] for q in changed] == [["Paris"], ["Kyoto"]]
    assert "Question 2" in turn.reply and '"Kyoto"' in turn.reply, turn.reply
    assert questions_of(chat, bm)[1]["answer"] == ["Tokyo", "Tōkyō"]  # nothing changed yet
    chat.approve(turn)
    assert questions_of(chat, bm)[1]["answer"] == ["Kyoto"]


def test_change_an_answer_without_naming_the_benchmark(world: World) -> None:
    alone = Chat(world, "alone@example.com")
    alone.benchmark()
    only = alone.say("change the answer of question 1 to Lyon")
    assert edit_of(only)["questions"][0]["answer"] == ["Lyon"], only.reply
    chat = Chat(world)
    bm = chat.benchmark()
    colours = chat.benchmark(MCQ)
    turn = chat.say("set question 2's answer to 42")
    assert turn.status == "awaiting_choice", turn.reply
    assert turn.reply == "Which benchmark's question 2 should I change?"
    proposed = chat.click(turn, bm)
    assert edit_of(proposed)["questions"][1]["answer"] == ["42"]
    assert proposed.proposal is not None and proposed.proposal.arguments["benchmark_id"] == bm
    chat.say(f"show {colours}")  # the benchmark just shown is the one meant
    shown = chat.say("change the answer of question 1 to Red")
    assert shown.proposal is not None, shown.reply
    assert shown.proposal.arguments["benchmark_id"] == colours


@pytest.mark.parametrize(("said", "letter"), [("b", "B"), ("Blue", "B"), ("C) Red", "C")])
def test_an_mcq_answer_is_a_choice(world: World, said: str, letter: str) -> None:
    chat = Chat(world)
    chat.benchmark(MCQ)
    turn = chat.say(f"change the answer of question 2 of Colours to {said}")
    changed = edit_of(turn)["questions"] if letter != "C" else None
    if changed is None:
        assert turn.proposal is None and "has the choices A) Green, B) Blue" in turn.reply
        return
    assert changed[1]["answer"] == letter and changed[0]["answer"] == "B"


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("change the answer of question 5 of Capitals to Rome", "has 2 questions: there is no"),
        ("change the answer of question 1 of Capitals to Paris", "already has the answer"),
        ("change the answer of question 1 of Colours to Purple", "has the choices A) Green"),
    ],
)
def test_an_answer_that_cannot_be_changed_proposes_nothing(
    world: World, text: str, said: str
) -> None:
    chat = Chat(world)
    chat.benchmark()
    chat.benchmark(MCQ)
    turn = chat.say(text)
    assert turn.proposal is None and said in turn.reply, turn.reply
    assert "Nothing was proposed" in turn.reply


def test_a_frozen_answer_is_refused_plainly(world: World) -> None:
    chat = Chat(world)
    bm = chat.benchmark()
    finished(chat, bm, RANDOM)
    turn = chat.say("change the answer of question 1 of Capitals to Lyon")
    assert turn.proposal is None
    assert turn.reply.startswith("I could not prepare that change: The questions and answer key")
    assert questions_of(chat, bm)[0]["answer"] == ["Paris"]


# --- 4. what only an administrator can do ----------------------------------------------------


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("make me an admin", "I can't change account rights"),
        ("give bob@example.com admin rights", "I can't change account rights"),
        ("delete my account", "I can't create, disable or delete accounts"),
        ("add a user bob@example.com", "I can't create, disable or delete accounts"),
        ("turn on sign ups", "I can't change how this BenchGen server is set up"),
        ("allow the agent to publish", "I can't change how this BenchGen server is set up"),
        ("raise my rate limit", "I can't change how this BenchGen server is set up"),
    ],
)
def test_what_only_an_administrator_can_do_links_no_admin_page(
    world: World, text: str, said: str
) -> None:
    chat = Chat(world)
    bm = chat.benchmark()
    turn = chat.say(text)
    assert (turn.status, turn.proposal) == ("completed", None), turn.reply
    # Only the read of the user's own account, to know whether the admin page would open.
    assert tools_used(turn) == ["my_account"]
    assert turn.reply.startswith(said), turn.reply
    assert "only an administrator of this BenchGen server can" in turn.reply
    assert "ask the person who runs it" in turn.reply
    assert "/admin" not in turn.reply and "http" not in turn.reply
    assert world.do(chat.web, lifecycle.get_benchmark, bm).title == "Capitals"


# --- 5. everyday wordings --------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    ["What can you help me with?", "hello, what is this?", "i need help", "how does this work?"],
)
def test_help_in_other_words(world: World, text: str) -> None:
    assert Chat(world).say(text).reply.startswith("I am BenchGen's offline assistant")


@pytest.mark.parametrize(
    ("text", "tools"),
    [
        ("lsit my benchmraks", ["list_benchmarks"]),
        ("shwo capitals", ["list_benchmarks", "show_benchmark"]),
        ("pubish Capitals", ["list_benchmarks", "propose_publish"]),
        ("evalute random on capitals", ["list_models", "list_benchmarks", "propose_run"]),
        ("can i run random on capitals?", ["list_models", "list_benchmarks", "propose_run"]),
        ("how many questions does capitals have?", ["list_benchmarks", "show_benchmark"]),
    ],
)
def test_typos_and_questions_still_reach_the_request(
    world: World, text: str, tools: list[str]
) -> None:
    chat = Chat(world)
    chat.benchmark(QA)
    turn = chat.say(text)
    assert tools_used(turn) == tools, turn.reply
    assert "did not understand" not in turn.reply


def test_a_typo_never_touches_a_title(world: World) -> None:
    chat = Chat(world)
    bm = chat.benchmark({**QA, "title": "Modles"})
    turn = chat.say("show Modles")
    assert calls(turn, "show_benchmark") == [{"benchmark_id": bm, "offset": 0, "limit": 5}], (
        turn.reply
    )


@pytest.mark.parametrize("text", ["thanks!", "great, thanks", "Thank you so much"])
def test_thanks(world: World, text: str) -> None:
    turn = Chat(world).say(text)
    assert turn.reply.startswith("You're welcome."), turn.reply
    assert turn.tool_calls == []


def test_thanks_after_a_proposal_says_it_did_not_happen(world: World) -> None:
    chat = Chat(world)
    bm = chat.benchmark()
    chat.say(f"publish {bm}")
    turn = chat.say("thanks")
    assert "was not approved, so it did not happen" in turn.reply, turn.reply
    assert world.do(chat.web, lifecycle.get_benchmark, bm).visibility == "private"


@pytest.mark.parametrize("text", ["yes", "approve", "ok"])
def test_yes_with_nothing_to_approve_does_nothing(world: World, text: str) -> None:
    chat = Chat(world)
    chat.benchmark()
    turn = chat.say(text)
    assert turn.reply.startswith("There is nothing waiting for your approval"), turn.reply
    assert turn.tool_calls == [] and turn.proposal is None


@pytest.mark.parametrize(
    ("text", "entry"),
    [
        ("how do I create a benchmark?", "create a qa or mcq benchmark"),
        ("How can I run a model?", "run a model on a benchmark"),
        ("how to publish", "publish a benchmark"),
    ],
)
def test_how_do_i_explains_without_acting(world: World, text: str, entry: str) -> None:
    turn = Chat(world).say(text)
    assert turn.reply.startswith("Here is how"), turn.reply
    assert entry in turn.reply and turn.tool_calls == []


def test_how_do_i_about_a_never_action_still_refuses(world: World) -> None:
    turn = Chat(world).say("how do I add a collaborator?")
    assert turn.reply.startswith("I can't change collaborators"), turn.reply


def test_what_a_run_costs(world: World) -> None:
    turn = Chat(world).say("how much does a run cost?")
    assert "`list models` shows each model's price" in turn.reply
    assert world.rt.settings.link("/settings/billing") in turn.reply


@pytest.mark.parametrize(
    ("text", "page"),
    [
        ("upload a dataset", "/datasets"),
        ("add a model", "/models/new"),
        ("register my openai model gpt-4o", "/models/new"),
    ],
)
def test_pages_for_what_the_chat_cannot_do(world: World, text: str, page: str) -> None:
    turn = Chat(world).say(text)
    assert turn.reply.startswith("I can't "), turn.reply
    assert world.rt.settings.link(page) in turn.reply
