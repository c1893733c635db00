"""The offline brain through the real harness: each request form in several phrasings, choice
buttons that lead to proposals, A13 refusals, follow-ups, and a whole create → run → status flow."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo

from benchgen.agent.brains import Brain
from benchgen.agent.brains.offline.planner import offline_model
from benchgen.agent.never import refusal
from benchgen.core.clock import ManualClock
from benchgen.core.context import Principal
from benchgen.core.permissions import Action
from benchgen.jobs.worker import Worker
from benchgen.services.benchmarks import lifecycle
from benchgen.services.chat import proposals
from benchgen.services.chat.conversations import TurnView
from benchgen.services.runs import launch
from tests.agent.scripted import new_conversation, say, think_with
from tests.support import MCQ, World
from tests.support import QA as QA_SPEC

RANDOM = "mdl_builtin_random"
FIRST = "mdl_builtin_first"


class Chat:
    """One user's conversation with the offline brain."""

    def __init__(self, world: World, email: str = "ana@example.com") -> None:
        self.world = world
        self.user = world.user(email)
        self.web = Principal.web(self.user)
        self.conv = new_conversation(world.rt, self.web)
        self.brain = Brain("offline", offline_model(world.rt.settings))

    def say(self, text: str) -> TurnView:
        return say(self.world.rt, self.web, self.conv, self.brain, text=text)

    def post(self, action: dict[str, Any]) -> TurnView:
        return say(self.world.rt, self.web, self.conv, self.brain, action=action)

    def click(self, turn: TurnView, label_part: str) -> TurnView:
        """Press the first button whose label holds `label_part`."""
        chosen = [b for b in turn.buttons if label_part in b["label"]]
        assert chosen, [b["label"] for b in turn.buttons]
        return self.post(chosen[0]["action"])

    def approve(self, turn: TurnView) -> TurnView:
        assert turn.status == "awaiting_approval", turn.reply
        return self.click(turn, "Approve")

    def benchmark(self, spec: dict[str, Any] | None = None) -> str:
        return self.world.benchmark(self.user, spec)

    def pending(self) -> Any:
        return self.world.ctx_call(self.web, lambda c: proposals.pending_for(c, self.conv))


def labels(turn: TurnView) -> list[str]:
    return [button["label"] for button in turn.buttons]


def run_of(turn: TurnView) -> tuple[str, str]:
    """The benchmark and model of a proposed run."""
    assert turn.proposal is not None and turn.proposal.kind == "start_run", turn.reply
    return turn.proposal.arguments["benchmark_id"], turn.proposal.arguments["model_id"]


def tools_used(turn: TurnView) -> list[str]:
    return [call["tool"] for call in turn.tool_calls]


# --- lists -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text", ["list my benchmarks", "which benchmarks do I have?", "Show me my benchmarks please"]
)
def test_list_my_benchmarks(world: World, text: str) -> None:
    chat = Chat(world)
    capitals = chat.benchmark()
    turn = chat.say(text)
    assert turn.status == "completed", turn.reply
    assert f"Capitals ({capitals}): qa, 2 questions, private" in turn.reply
    assert tools_used(turn) == ["list_benchmarks"]


def test_list_with_nothing_says_how_to_start(world: World) -> None:
    turn = Chat(world).say("list my benchmarks")
    assert "You have no benchmarks yet" in turn.reply and "Q: " in turn.reply


@pytest.mark.parametrize(
    "text", ["list models", "what models can I use?", "which models are there", "models"]
)
def test_list_models(world: World, text: str) -> None:
    turn = Chat(world).say(text)
    assert turn.status == "completed", turn.reply
    assert f"Baseline: seeded random ({RANDOM}): builtin, free" in turn.reply
    assert FIRST in turn.reply and "mdl_builtin_echo" in turn.reply


@pytest.mark.parametrize("text", ["show my runs", "list my runs", "what runs do I have?"])
def test_list_runs(world: World, text: str) -> None:
    chat = Chat(world)
    bm = chat.benchmark()
    run = world.do(chat.web, launch.start_run, bm, RANDOM)
    turn = chat.say(text)
    assert turn.status == "completed", turn.reply
    assert f"{run.id}: Baseline: seeded random on {bm}" in turn.reply
    assert "queued, 0/2 done" in turn.reply


def test_list_runs_when_none(world: World) -> None:
    assert "You have no runs yet" in Chat(world).say("show my runs").reply


# --- show ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "show benchmark Capitals",
        "show me the Capitals benchmark",
        "what's in capitals?",
        "open {id}",
        "tell me about {id}",
    ],
)
def test_show_benchmark(world: World, text: str) -> None:
    chat = Chat(world)
    bm = chat.benchmark()
    chat.benchmark(MCQ)
    turn = chat.say(text.format(id=bm))
    assert turn.status == "completed", turn.reply
    assert turn.reply.startswith(f"Capitals ({bm}): qa, private, 2 questions.")
    assert "1. Capital of France? — answer: Paris" in turn.reply
    assert "2. Capital of Japan? — answer: Tokyo | Tōkyō" in turn.reply


def test_show_mcq_lists_choices(world: World) -> None:
    chat = Chat(world)
    bm = chat.benchmark(MCQ)
    turn = chat.say(f"show {bm}")
    assert "1. Colour of the sky? A) Green B) Blue C) Red — answer: B" in turn.reply


def test_show_unclear_offers_buttons_that_show(world: World) -> None:
    chat = Chat(world)
    bm = chat.benchmark()
    chat.benchmark(MCQ)
    turn = chat.say("show benchmark Planets")
    assert turn.status == "awaiting_choice", turn.reply
    assert 'no single benchmark called "Planets"' in turn.reply
    assert f"Show Capitals ({bm})" in labels(turn)
    shown = chat.click(turn, "Capitals")
    assert shown.reply.startswith(f"Capitals ({bm})")


# --- run -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "run Baseline: seeded random on Capitals",
        "please run the random baseline against my capitals quiz",
        "Can you evaluate seeded random on Capitals?",
        "run Capitals with the seeded random baseline",
        "test {model} on {bm}",
    ],
)
def test_run_named_proposes(world: World, text: str) -> None:
    chat = Chat(world)
    bm = chat.benchmark()
    chat.benchmark(MCQ)
    turn = chat.say(text.format(model=RANDOM, bm=bm))
    assert turn.status == "awaiting_approval", turn.reply
    assert turn.proposal is not None and turn.proposal.kind == "start_run"
    assert turn.proposal.arguments["benchmark_id"] == bm
    assert turn.proposal.arguments["model_id"] == RANDOM
    assert "Capitals" in turn.reply


@pytest.mark.parametrize(
    "text", ["run Capitals", "evaluate a model on Capitals", "Please test something on capitals"]
)
def test_run_with_model_open_offers_models(world: World, text: str) -> None:
    chat = Chat(world)
    bm = chat.benchmark()
    turn = chat.say(text)
    assert turn.status == "awaiting_choice", turn.reply
    assert turn.proposal is None
    assert f"Which model should I run on Capitals ({bm})?" == turn.reply
    assert f"Run Baseline: seeded random ({RANDOM}) on Capitals ({bm})" in labels(turn)
    assert not any(FIRST in label for label in labels(turn))  # choices only; Capitals is qa
    assert all(b["action"]["type"] == "choose" for b in turn.buttons)
    proposed = chat.click(turn, RANDOM)
    assert proposed.status == "awaiting_approval", proposed.reply
    assert proposed.proposal is not None
    assert run_of(proposed) == (bm, RANDOM)


def test_run_with_ambiguous_model_offers_only_matches(world: World) -> None:
    chat = Chat(world)
    chat.benchmark()
    turn = chat.say("run the baseline on Capitals")
    assert turn.status == "awaiting_choice", turn.reply
    # The baselines that answer qa, nothing else: "always the first choice" needs choices.
    assert len(turn.buttons) == 2 and not any(FIRST in label for label in labels(turn))


@pytest.mark.parametrize(
    "text", ["run first-choice", "run {model}", "evaluate the first choice baseline"]
)
def test_run_with_benchmark_open_offers_benchmarks(world: World, text: str) -> None:
    chat = Chat(world)
    capitals = chat.benchmark()
    colours = chat.benchmark(MCQ)
    turn = chat.say(text.format(model=FIRST))
    assert turn.status == "awaiting_choice", turn.reply
    assert "Which benchmark should I run Baseline: always the first choice" in turn.reply
    assert f"Run Baseline: always the first choice ({FIRST}) on Colours ({colours})" in labels(turn)
    assert not any(capitals in label for label in labels(turn))  # qa: it cannot answer it
    proposed = chat.click(turn, "Colours")
    assert proposed.proposal is not None
    assert run_of(proposed) == (colours, FIRST)


def test_run_with_both_open_asks_benchmark_then_model(world: World) -> None:
    chat = Chat(world)
    bm = chat.benchmark()
    turn = chat.say("run something")
    assert labels(turn) == [f"Run on Capitals ({bm})"]
    models_asked = chat.click(turn, "Capitals")
    assert models_asked.status == "awaiting_choice", models_asked.reply
    assert "Which model should I run on Capitals" in models_asked.reply
    proposed = chat.click(models_asked, RANDOM)
    assert proposed.proposal is not None
    assert run_of(proposed) == (bm, RANDOM)


def test_run_without_benchmarks_says_so(world: World) -> None:
    turn = Chat(world).say("run first-choice")
    assert turn.status == "completed"
    assert "no benchmark to run on yet" in turn.reply


def test_run_tool_error_is_said_plainly(world: World) -> None:
    chat = Chat(world)
    turn = chat.say(f"run {RANDOM} on bm_doesnotexist0000000")
    assert turn.status == "completed", turn.reply
    assert turn.reply.startswith("I could not prepare that run:")
    assert turn.proposal is None


def test_a_question_refused_for_its_length_says_which_and_why(world: World) -> None:
    # The create call is refused for its arguments before it runs: the reason reaches the user.
    chat = Chat(world)
    turn = chat.say('Create a benchmark called "Long":\nQ: ' + "x" * 20_001 + "?\nA: yes")
    assert (turn.status, turn.proposal, turn.buttons) == ("completed", None, [])
    assert turn.reply == (
        "I could not prepare the new benchmark: the prompt of question 1 must have at most "
        "20000 characters. Nothing was done."
    ), turn.reply[:300]


# --- status and results ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "text", ["is it done?", "how did my last run do?", "has my run finished yet", "status of {run}"]
)
def test_status_of_queued_run(world: World, text: str) -> None:
    chat = Chat(world)
    bm = chat.benchmark()
    run = world.do(chat.web, launch.start_run, bm, RANDOM)
    turn = chat.say(text.format(run=run.id))
    assert turn.status == "completed", turn.reply
    assert turn.reply.startswith(f"Run {run.id} (Baseline: seeded random on {bm}): queued")
    assert "not done yet" in turn.reply
    assert "Progress: 0/2 questions answered." in turn.reply


@pytest.mark.parametrize("text", ["is it done?", "how did it go?", "what did it get wrong?"])
def test_status_without_runs(world: World, text: str) -> None:
    turn = Chat(world).say(text)
    assert turn.status == "completed", turn.reply
    assert "You have no runs yet" in turn.reply


@pytest.mark.parametrize(
    "text", ["show results of my last run", "what did it get wrong?", "results of {run}"]
)
def test_results_of_finished_run(world: World, text: str) -> None:
    chat = Chat(world)
    bm = chat.benchmark(MCQ)
    run = world.do(chat.web, launch.start_run, bm, FIRST)
    _work_all(world)
    turn = chat.say(text.format(run=run.id))
    assert turn.status == "completed", turn.reply
    assert f"Run {run.id}" in turn.reply and "completed." in turn.reply
    assert "Accuracy: 50% (1 of 2 correct" in turn.reply
    assert "1. Colour of the sky? → A (wrong; expected B)" in turn.reply
    assert "2. Colour of grass? → A (correct; expected A)" in turn.reply


# --- publish ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text", ["publish Capitals", "make my capitals benchmark public", "share {bm} with everyone"]
)
def test_publish_named(world: World, text: str) -> None:
    chat = Chat(world)
    bm = chat.benchmark()
    chat.benchmark(MCQ)
    turn = chat.say(text.format(bm=bm))
    assert turn.status == "awaiting_approval", turn.reply
    assert turn.proposal is not None and turn.proposal.kind == "publish_benchmark"
    assert turn.proposal.arguments["benchmark_id"] == bm
    done = chat.approve(turn)
    assert done.reply.startswith(f"Published benchmark {bm}")


@pytest.mark.parametrize("text", ["publish", "publish my benchmark", "publish Planets"])
def test_publish_open_offers_unpublished(world: World, text: str) -> None:
    chat = Chat(world)
    bm = chat.benchmark()
    colours = chat.benchmark(MCQ)
    world.do(chat.web, lifecycle.publish_benchmark, colours)
    turn = chat.say(text)
    assert turn.status == "awaiting_choice", turn.reply
    assert labels(turn) == [f"Publish Capitals ({bm})"]
    proposed = chat.click(turn, "Capitals")
    assert proposed.proposal is not None
    assert proposed.proposal.arguments["benchmark_id"] == bm


def test_publish_when_all_published(world: World) -> None:
    chat = Chat(world)
    bm = chat.benchmark()
    world.do(chat.web, lifecycle.publish_benchmark, bm)
    turn = chat.say("publish something")
    assert turn.status == "completed"
    assert "already published" in turn.reply


def test_publish_other_users_benchmark_is_refused_by_the_platform(world: World) -> None:
    chat = Chat(world)
    other = world.user("bob@example.com")
    theirs = world.benchmark(other)
    turn = chat.say(f"publish {theirs}")
    assert turn.status == "completed"
    assert turn.reply.startswith("I could not prepare publishing that benchmark:")


# --- create ----------------------------------------------------------------------------------

QA_TEXTS = [
    'Create a benchmark called "Sums":\nQ: 2+2?\nA: 4\nQ: 3+3?\nA: 6',
    "make a qa benchmark titled Sums with Q: 2+2? A: 4 Q: 3+3? A: 6",
    "New quiz named Sums.\n1. 2+2?\nAnswer: 4\n2. 3+3?\nAnswer: 6",
    "Title: Sums\nQuestion 1: 2+2?\nAnswer: 4\nQuestion 2: 3+3?\nAnswer: 6",
]


@pytest.mark.parametrize("text", QA_TEXTS)
def test_create_qa(world: World, text: str) -> None:
    chat = Chat(world)
    turn = chat.say(text)
    assert turn.status == "awaiting_approval", turn.reply
    assert turn.proposal is not None and turn.proposal.kind == "create_benchmark"
    arguments = turn.proposal.arguments
    assert arguments["title"] == "Sums" and arguments["format"] == "qa"
    assert [q["prompt"] for q in arguments["questions"]] == ["2+2?", "3+3?"]
    assert '"2+2?"' in turn.reply


MCQ_TEXTS = [
    "Create an mcq benchmark called Colours:\n1. Colour of the sky?\na) Green\nb) Blue\nc) Red\n"
    "Answer: b\n2. Colour of grass?\na) Green\nb) Blue\nAnswer: a",
    'Make a quiz titled "Colours"\n1) Colour of the sky?\nA. Green\nB. Blue\nC. Red\nAnswer: B\n'
    "2) Colour of grass?\nA. Green\nB. Blue\nAnswer: A",
    "new benchmark named Colours\n1. Colour of the sky? a) Green b) Blue c) Red\nAnswer: Blue\n"
    "2. Colour of grass? a) Green b) Blue\nCorrect answer: (a)",
]


@pytest.mark.parametrize("text", MCQ_TEXTS)
def test_create_mcq(world: World, text: str) -> None:
    chat = Chat(world)
    turn = chat.say(text)
    assert turn.status == "awaiting_approval", turn.reply
    assert turn.proposal is not None
    arguments = turn.proposal.arguments
    assert arguments["title"] == "Colours" and arguments["format"] == "mcq"
    shown = [(q["prompt"], q["choices"], q["answer"]) for q in arguments["questions"]]
    assert shown == [
        ("Colour of the sky?", ["Green", "Blue", "Red"], "B"),
        ("Colour of grass?", ["Green", "Blue"], "A"),
    ]


def test_create_with_a_forbidden_word_in_a_question_is_still_create(world: World) -> None:
    chat = Chat(world)
    text = 'Create a benchmark called "Ops":\nQ: How do you delete a benchmark?\nA: In settings'
    turn = chat.say(text)
    assert turn.status == "awaiting_approval", turn.reply
    assert turn.proposal is not None and turn.proposal.kind == "create_benchmark"


def test_create_with_missing_answer_says_what_is_missing(world: World) -> None:
    turn = Chat(world).say("Create Sums:\nQ: 2+2?\nQ: 3+3?\nA: 6")
    assert turn.status == "completed"
    assert "question 1 has no answer" in turn.reply and "Nothing was proposed" in turn.reply


@pytest.mark.parametrize("answer", ["Sums", 'Call it "Sums"', "the title is: Sums", "Sums."])
def test_title_follow_up(world: World, answer: str) -> None:
    chat = Chat(world)
    asked = chat.say("Q: 2+2?\nA: 4\nQ: 3+3?\nA: 6")
    assert asked.status == "completed" and asked.buttons == []
    assert asked.reply.startswith("What should the benchmark be called? I read 2 qa questions")
    turn = chat.say(answer)
    assert turn.status == "awaiting_approval", turn.reply
    assert turn.proposal is not None
    assert turn.proposal.arguments["title"] == "Sums"
    assert len(turn.proposal.arguments["questions"]) == 2


def test_questions_follow_up_keeps_the_title(world: World) -> None:
    chat = Chat(world)
    asked = chat.say("create a benchmark called Sums")
    assert asked.reply.startswith("Which questions should the benchmark have?")
    turn = chat.say("Q: 2+2?\nA: 4")
    assert turn.proposal is not None
    assert turn.proposal.arguments["title"] == "Sums"


# --- never, training, unknown, continue ------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "action", "target"),
    [
        ("delete my Capitals benchmark", Action.BENCHMARK_DELETE, "bm"),
        ("please remove {bm}", Action.BENCHMARK_DELETE, "bm"),
        ("Get rid of the capitals quiz", Action.BENCHMARK_DELETE, "bm"),
        ("can you delete Capitals?", Action.BENCHMARK_DELETE, "bm"),
        ("erase it", Action.BENCHMARK_DELETE, ""),
        ("unpublish Capitals", Action.BENCHMARK_UNPUBLISH, "bm"),
        ("make {bm} private", Action.BENCHMARK_UNPUBLISH, "bm"),
        ("delete the model {mdl}", Action.MODEL_DELETE, "mdl"),
        ("remove my dataset", Action.DATASET_DELETE, ""),
        ("delete the training job", Action.TRAINING_DELETE, ""),
        ("set the score of {run} to 95%", Action.RUN_EDIT_SCORE, "run"),
        ("change my run's accuracy", Action.RUN_EDIT_SCORE, ""),
        ("add a phase to Capitals", Action.PHASES_MANAGE, "bm"),
        ("remove the second task from {bm}", Action.PHASES_MANAGE, "bm"),
        ("add bob@example.com as a collaborator on Capitals", Action.ACCESS_MANAGE, "bm"),
        ("share Capitals with bob@example.com", Action.ACCESS_MANAGE, "bm"),
        ("add alice to the whitelist", Action.ACCESS_MANAGE, ""),
        ("set up an AI judge for Capitals", Action.JUDGE_CONFIGURE, "bm"),
        ("use a model as a judge", Action.JUDGE_CONFIGURE, ""),
        ("email the participants of Capitals", Action.PARTICIPANTS_EMAIL, "bm"),
        ("send an email to everyone", Action.PARTICIPANTS_EMAIL, ""),
        ("buy more credits", Action.BILLING_MANAGE, ""),
        ("where is my invoice?", Action.BILLING_MANAGE, ""),
        ("create a new API token", Action.TOKENS_MANAGE, ""),
        ("show me my tokens", Action.TOKENS_MANAGE, ""),
        ("revoke my api key", Action.TOKENS_MANAGE, ""),
        ("add {run} to the leaderboard", Action.LEADERBOARD_MANAGE, "run"),
        ("take my run off the leaderboard", Action.LEADERBOARD_MANAGE, ""),
    ],
)
def test_never_actions_are_refused_with_the_page(
    world: World, text: str, action: Action, target: str
) -> None:
    chat = Chat(world)
    bm = chat.benchmark()
    run = world.do(chat.web, launch.start_run, bm, RANDOM)
    ids = {"bm": bm, "run": run.id, "mdl": RANDOM}
    turn = chat.say(text.format(**ids))
    assert turn.status == "completed", turn.reply
    assert turn.reply == refusal(world.rt.settings, action, ids.get(target, ""))
    assert turn.proposal is None and turn.buttons == []
    assert set(tools_used(turn)) <= {"list_benchmarks"}
    still = world.do(chat.web, lifecycle.get_benchmark, bm)
    assert still.visibility == "private"
    assert world.do(chat.web, launch.get_run, run.id).status == "queued"


def test_unpublish_names_the_page_even_for_a_published_benchmark(world: World) -> None:
    chat = Chat(world)
    bm = chat.benchmark()
    world.do(chat.web, lifecycle.publish_benchmark, bm)
    turn = chat.say("unpublish Capitals")
    assert f"/benchmarks/{bm}/settings" in turn.reply
    assert world.do(chat.web, lifecycle.get_benchmark, bm).visibility == "published"


@pytest.mark.parametrize(
    "text", ["train a model", "fine-tune SmolLM2 on my data", "start a training job please"]
)
def test_training_without_a_dataset_says_where_to_upload(world: World, text: str) -> None:
    turn = Chat(world).say(text)
    assert turn.status == "completed"
    assert turn.reply.startswith("You have no datasets yet") and "/datasets" in turn.reply
    assert turn.proposal is None
    assert set(tools_used(turn)) == {"list_training_bases", "list_datasets"}


@pytest.mark.parametrize(
    "text", ["what is the meaning of life", "sing me a song about Capitals", "bake me a cake"]
)
def test_unknown_says_what_it_can_do(world: World, text: str) -> None:
    turn = Chat(world).say(text)
    assert turn.status == "completed"
    assert turn.reply.startswith(f'I did not understand "{text}"')
    for example in ("list my benchmarks", "run ", "is it done?", "publish Capitals", "Q: "):
        assert example in turn.reply
    assert turn.tool_calls == []


@pytest.mark.parametrize("text", ["help", "hi", "what can you do?"])
def test_help(world: World, text: str) -> None:
    turn = Chat(world).say(text)
    assert turn.reply.startswith("I am BenchGen's offline assistant")


@pytest.mark.parametrize("text", ["continue", "Continue.", "go on"])
def test_continue_after_an_answer_says_there_is_nothing_to_continue(
    world: World, text: str
) -> None:
    chat = Chat(world)
    chat.benchmark()
    chat.say("show my benchmarks")
    again = chat.say(text)
    assert again.status == "completed" and again.tool_calls == []
    assert again.reply.startswith("There is nothing to continue")
    assert 'Last I said: "' in again.reply


def test_continue_after_an_approved_run_never_proposes_it_again(world: World) -> None:
    chat = Chat(world)
    bm = chat.benchmark()
    started = chat.approve(chat.say(f"run {RANDOM} on {bm}"))
    assert started.reply.startswith("Started run run_"), started.reply
    again = chat.say("continue")
    assert again.status == "completed" and again.proposal is None, again.reply
    assert "propose_run" not in tools_used(again) and chat.pending() is None
    assert again.reply.startswith("There is nothing to continue")


def test_continue_after_a_typed_yes_is_not_a_request_for_yes(world: World) -> None:
    chat = Chat(world)
    chat.say('create a benchmark called "Sums":\nQ: 2+2?\nA: 4')
    created = chat.say("yes")
    assert created.reply.startswith("Created benchmark bm_"), created.reply
    again = chat.say("continue")
    assert "did not understand" not in again.reply and again.tool_calls == []
    assert again.reply.startswith("There is nothing to continue")


def test_continue_after_a_question_does_not_ask_it_again(world: World) -> None:
    chat = Chat(world)
    chat.benchmark()
    chat.say("run Capitals")
    turn = chat.say("continue")
    assert turn.status == "completed" and turn.buttons == []
    assert 'Last I said: "Which model should I run on Capitals' in turn.reply


def test_continue_goes_on_after_a_turn_stopped_at_the_cap(world: World, clock: ManualClock) -> None:
    chat = Chat(world)
    chat.benchmark()
    cap = world.rt.settings.agent_turn_cap_s

    def slow(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        clock.advance(seconds=cap + 1)
        return ModelResponse(parts=[ToolCallPart("list_benchmarks", {})])

    capped = say(world.rt, chat.web, chat.conv, think_with(slow), "show my benchmarks")
    assert capped.status == "stopped_at_cap"
    turn = chat.say("continue")
    assert turn.status == "completed" and "Capitals" in turn.reply, turn.reply
    assert tools_used(turn) == ["list_benchmarks"]
    assert chat.say("continue").reply.startswith("There is nothing to continue")


def test_continue_with_nothing_before(world: World) -> None:
    assert "nothing earlier to continue" in Chat(world).say("continue").reply


# --- the whole flow --------------------------------------------------------------------------


@pytest.mark.both_backends
def test_create_run_and_check(world: World) -> None:
    chat = Chat(world)
    proposed = chat.say(
        'Please create a benchmark called "Capital cities":\n'
        "Q: Capital of France?\nA: Paris\nQ: Capital of Italy?\nA: Rome"
    )
    assert proposed.proposal is not None
    created = chat.approve(proposed)
    assert created.status == "completed", created.reply
    assert created.reply.startswith("Created benchmark bm_")
    listed = world.do(chat.web, lifecycle.list_benchmarks, mine_only=True)
    assert [b.title for b in listed] == ["Capital cities"]
    bm = listed[0].id

    run_proposed = chat.say("run Baseline: echo the prompt on Capital cities")
    assert run_proposed.proposal is not None
    assert run_of(run_proposed) == (bm, "mdl_builtin_echo")
    assert "0 credits" in run_proposed.reply or "free" in run_proposed.reply.casefold()
    started = chat.approve(run_proposed)
    assert started.reply.startswith("Started run run_"), started.reply

    waiting = chat.say("is it done?")
    assert "queued" in waiting.reply and "not done yet" in waiting.reply
    _work_all(world)
    finished = chat.say("is it done?")
    assert "completed." in finished.reply and "Progress: 2/2 questions answered." in finished.reply
    assert "Accuracy: 0% (0 of 2 correct" in finished.reply
    assert "Cost: 0 credits." in finished.reply


def test_declining_then_asking_again(world: World) -> None:
    chat = Chat(world)
    chat.benchmark()
    proposed = chat.say(f"run {RANDOM} on Capitals")
    declined = chat.click(proposed, "Decline")
    assert declined.reply.startswith("Declined.")
    assert chat.pending() is None
    again = chat.say(f"run {RANDOM} on Capitals")
    assert again.status == "awaiting_approval"


def _work_all(world: World) -> None:
    worker = Worker(world.rt)
    while worker.run_once():
        pass


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("how many tokens did my run use", None),
        ("show the leaderboard", None),
        ("set up a benchmark that measures accuracy", None),
        ("make a private benchmark called Sums", None),
        ("run random on Capitals and tell me the score", "start_run"),
        ('Create "Ops":\nQ: Should I delete the model?\nA: No', "create_benchmark"),
        ('Create "Ops":\nQ: Who can email participants?\nA: The owner', "create_benchmark"),
    ],
)
def test_normal_requests_are_not_refused(world: World, text: str, kind: str | None) -> None:
    chat = Chat(world)
    chat.benchmark()
    turn = chat.say(text)
    assert "I can't" not in turn.reply, turn.reply
    assert (turn.proposal.kind if turn.proposal else None) == kind


@pytest.mark.parametrize("word", ["decline", "Declined.", "reject", "don't"])
def test_typing_the_cards_decline_word_says_nothing_was_done(world: World, word: str) -> None:
    """ "decline" declined, then answered "I did not understand" with the help text."""
    chat = Chat(world)
    bm = chat.benchmark()
    shown = chat.say(f"publish {bm}")
    assert shown.status == "awaiting_approval"
    turn = chat.say(word)
    assert "Nothing was done" in turn.reply and "did not understand" not in turn.reply
    assert chat.pending() is None


def test_cancel_after_the_title_question(world: World) -> None:
    chat = Chat(world)
    chat.say("Q: 2+2?\nA: 4")
    turn = chat.say("never mind")
    assert turn.status == "completed" and "Nothing was done" in turn.reply
    assert turn.proposal is None


def test_mixed_choices_are_reported(world: World) -> None:
    text = "Create Mixed:\n1. Pick one\na) x\nb) y\nAnswer: a\n2. Free text?\nAnswer: z"
    turn = Chat(world).say(text)
    assert turn.status == "completed"
    assert "question 2 has no choices" in turn.reply


def test_long_titles_keep_their_ids_in_buttons(world: World) -> None:
    chat = Chat(world)
    title = "Geography " + "very " * 35 + "long"
    bm = chat.benchmark({**QA_SPEC, "title": title})
    turn = chat.say("run geography")
    assert turn.status == "awaiting_choice", turn.reply
    assert all(len(label) <= 200 and bm in label for label in labels(turn))
    proposed = chat.click(turn, RANDOM)
    assert run_of(proposed) == (bm, RANDOM)


# --- other ways of writing questions ---------------------------------------------------------

CAPITALS_TEXTS = [
    "create a qa benchmark called Capitals with 2 questions:\nFrance -> Paris\nItaly => Rome",
    "create a qa benchmark called Capitals:\n1. Capital of France? Paris\n"
    "2. Capital of Italy? Rome",
    'create a benchmark called Capitals:\n[{"prompt": "Capital of France?", "answer": "Paris"},'
    ' {"question": "Capital of Italy?", "answer": "Rome"}]',
    "create a benchmark called Capitals\nquestion,answer\nCapital of France?,Paris\n"
    "Capital of Italy?,Rome",
]


@pytest.mark.parametrize("text", CAPITALS_TEXTS)
def test_create_from_pairs_json_and_csv(world: World, text: str) -> None:
    turn = Chat(world).say(text)
    assert turn.status == "awaiting_approval", turn.reply
    assert turn.proposal is not None and turn.proposal.arguments["title"] == "Capitals"
    answers = [q["answer"] for q in turn.proposal.arguments["questions"]]
    assert answers == [["Paris"], ["Rome"]]


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("create a benchmark called Capitals:\nFrance -> Paris\nItaly Rome\nSpain -> Madrid", 3),
        ('create a benchmark called "Sums":\nQ: 2+2?\nA: 4\nthanks, bye\nQ: 3+3?\nA: 6', 4),
        ("create a benchmark called Capitals\nprompt,answer\nFrance?,Paris\nItaly?", 4),
    ],
)
def test_lines_that_are_not_read_are_named(world: World, text: str, line: int) -> None:
    turn = Chat(world).say(text)
    assert turn.proposal is None and "Nothing was proposed" in turn.reply
    assert f"could not be read as questions: line {line} (" in turn.reply


def test_brackets_nested_past_the_json_parsers_depth_are_no_table(world: World) -> None:
    """A RecursionError from the JSON parser failed the turn."""
    turn = Chat(world).say("create a benchmark called Junk:\n" + "[" * 3000 + "]" * 3000)
    assert turn.status != "failed" and turn.proposal is None, turn.reply
