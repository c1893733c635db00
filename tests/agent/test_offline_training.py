"""The offline planner's training requests: "fine-tune MODEL on DATASET" in several phrasings,
candidates as buttons, and "is it done?" reporting a training job."""

from __future__ import annotations

from typing import Any

import pytest

from benchgen.agent.brains import Brain
from benchgen.agent.brains.offline.planner import offline_model
from benchgen.core.clock import ManualClock
from benchgen.core.config import Settings
from benchgen.core.context import Principal
from benchgen.db.tables import TrainingJob
from benchgen.services import models
from benchgen.services.runs import launch
from benchgen.services.runtime import transaction
from benchgen.services.training import jobs
from tests.agent.scripted import new_conversation, say
from tests.agent.training_support import RANDOM, SMOL, Trainer, fixed_gpus
from tests.support import OPERATOR, World


@pytest.fixture
def settings(settings: Settings) -> Settings:
    # A fixed GPU pool, so plans never depend on what torch finds on the test machine.
    return fixed_gpus(settings)


@pytest.fixture
def tia(world: World) -> Trainer:
    return Trainer(world)


# --- the offline planner ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "hyper", "job_type"),
    [
        ("fine-tune SmolLM2 on Support replies", {}, None),
        ("finetune smollm2 on my dataset support replies", {}, None),
        ("train SmolLM2 on Support replies", {}, None),
        ("LoRA SmolLM2 with dataset Support replies", {}, "lora"),
        ("fine tune SmolLM2 using Support replies for 3 epochs", {"epochs": 3}, None),
        (
            "please fine-tune SmolLM2 on Support replies with learning rate 1e-4 on CPU",
            {"learning_rate": 0.0001},
            None,
        ),
        ("full fine-tune SmolLM2 on Support replies with batch size 8", {"batch_size": 8}, "sft"),
    ],
)
def test_the_planner_reads_fine_tune_requests(
    world: World, text: str, hyper: dict[str, Any], job_type: str | None
) -> None:
    tia = Trainer(world)
    tia.dataset("Sales emails")
    turn = tia.say(text)
    assert turn.status == "awaiting_approval", turn.reply
    assert turn.proposal is not None and turn.proposal.kind == "start_training"
    arguments = turn.proposal.arguments
    assert (arguments["base_model_id"], arguments["dataset_id"]) == (tia.smol, tia.support)
    assert arguments["job_type"] == (job_type or "lora")
    for key, value in hyper.items():
        assert arguments["hyperparameters"][key] == value
    assert arguments["compute"]["gpu_type"] is None


@pytest.mark.parametrize(
    ("words", "reason"),
    [
        ("for 500 epochs", "epochs must be at most 100 (you asked for 500)"),
        ("for 12345 epochs", "epochs must be at most 100 (you asked for 12345)"),
        ("for 1.5 epochs", "epochs must be a whole number (you asked for 1.5)"),
        ("with learning rate 5", "learning rate must be at most 0.1 (you asked for 5)"),
        ("with learning rate 0.5", "learning rate must be at most 0.1 (you asked for 0.5)"),
        ("with batch size 0", "batch size must be at least 1 (you asked for 0)"),
        (
            "with learning rate -1 and batch size 1e3",
            "learning rate must be greater than 0 (you asked for -1); "
            "batch size must be at most 256 (you asked for 1000)",
        ),
    ],
)
def test_an_out_of_range_setting_is_refused_saying_which_and_its_range(
    tia: Trainer, words: str, reason: str
) -> None:
    turn = tia.say(f"fine-tune SmolLM2 on Support replies {words}")
    assert (turn.status, turn.proposal, turn.buttons) == ("completed", None, [])
    expected = f"I could not prepare that training job: {reason}. Nothing was done."
    assert turn.reply == expected, turn.reply
    assert tia.jobs() == []


@pytest.mark.parametrize(
    ("words", "setting"),
    [
        ("for ten epochs", "the number of epochs"),
        ("for 1,000 epochs", "the number of epochs"),
        ("for " + "9" * 5000 + " epochs", "the number of epochs"),
        ("with learning rate 1e999", "the learning rate"),
        ("for 2 epochs with batch size 1,5", "the batch size"),
    ],
)
def test_a_setting_that_cannot_be_read_is_said_never_dropped(
    tia: Trainer, words: str, setting: str
) -> None:
    turn = tia.say(f"fine-tune SmolLM2 on Support replies {words}")
    assert turn.proposal is None and turn.buttons == []
    assert turn.reply.startswith(f"I could not read {setting} in your request"), turn.reply
    assert "proposed nothing" in turn.reply and turn.tool_calls == []


@pytest.mark.parametrize(
    ("name", "said"),
    [("Page rank data", "Page rank data"), ("Batch size notes", '"Batch size notes"')],
)
def test_setting_words_in_a_name_are_no_setting(tia: Trainer, name: str, said: str) -> None:
    dataset = tia.dataset(name)
    turn = tia.say(f"fine-tune SmolLM2 on {said} for 2 epochs")
    assert turn.proposal is not None, turn.reply
    assert turn.proposal.arguments["dataset_id"] == dataset
    assert turn.proposal.arguments["hyperparameters"]["epochs"] == 2


def test_on_a_gpu_takes_the_one_gpu_pool(tia: Trainer) -> None:
    turn = tia.say("fine-tune SmolLM2 on Support replies on a GPU")
    assert turn.proposal is not None, turn.reply
    assert turn.proposal.arguments["compute"] == {"gpu_type": "H200", "gpus": 1}
    assert "Compute: 1 × H200 GPU: free now (1 of 1)" in turn.reply


def test_a_gpu_that_does_not_exist_is_refused_plainly(tia: Trainer) -> None:
    turn = tia.say("fine-tune SmolLM2 on Support replies on 2 A100 GPUs")
    assert turn.proposal is None
    assert turn.reply.startswith("I could not prepare that training job:")
    assert "A100" in turn.reply and "H200" in turn.reply


def test_an_open_dataset_is_asked_with_buttons_that_propose(tia: Trainer) -> None:
    sales = tia.dataset("Sales emails")
    turn = tia.say("fine-tune SmolLM2 on my data for 2 epochs")
    assert turn.status == "awaiting_choice", turn.reply
    assert turn.reply.startswith("Which dataset should I train SmolLM2-135M-Instruct (local)")
    chosen = tia.press(turn, "Sales emails")
    assert chosen.proposal is not None, chosen.reply
    assert chosen.proposal.arguments["dataset_id"] == sales
    assert chosen.proposal.arguments["hyperparameters"]["epochs"] == 2


def test_an_ambiguous_dataset_or_model_offers_the_matches(tia: Trainer) -> None:
    v2 = tia.dataset("Support replies v2")
    tia.dataset("Sales emails")
    turn = tia.say("fine-tune SmolLM2 on support")
    assert turn.reply.startswith('You have no single dataset called "support".')
    assert {b["label"].rsplit(" on ", 1)[1] for b in turn.buttons} == {
        f"Support replies v2 ({v2})",
        f"Support replies ({tia.support})",
    }
    second = tia.world.do(OPERATOR, models.create_platform_model, {**SMOL, "name": "SmolLM2 b"})
    turn = tia.say("fine-tune SmolLM2 on Support replies")
    assert turn.reply.startswith('I found no single trainable model called "SmolLM2".')
    chosen = tia.press(turn, second.id)
    assert chosen.proposal is not None, chosen.reply
    assert chosen.proposal.arguments["base_model_id"] == second.id
    assert chosen.proposal.arguments["dataset_id"] == tia.support


def test_an_unknown_dataset_says_which_exist(tia: Trainer) -> None:
    turn = tia.say("fine-tune SmolLM2 on Cooking recipes")
    assert turn.reply.startswith('You have no single dataset called "Cooking recipes".')
    assert [b["label"] for b in turn.buttons] == [
        f"Train SmolLM2-135M-Instruct (local) ({tia.smol}) on Support replies ({tia.support})"
    ]


def test_an_open_model_offers_the_trainable_ones(tia: Trainer) -> None:
    turn = tia.say("train a model on Support replies")
    assert turn.status == "awaiting_choice", turn.reply
    assert [b["label"] for b in turn.buttons] == [
        f"Train SmolLM2-135M-Instruct (local) ({tia.smol}) on Support replies ({tia.support})"
    ]
    assert tia.press(turn, "SmolLM2").proposal is not None


def test_a_model_that_cannot_be_trained_says_why(tia: Trainer) -> None:
    turn = tia.say("fine-tune Baseline: seeded random on Support replies")
    assert turn.proposal is None
    assert turn.reply.startswith(f"Baseline: seeded random ({RANDOM}) cannot be trained here:")
    assert "Models you can train:" in turn.reply and tia.smol in turn.reply


def test_without_datasets_says_where_to_upload(world: World) -> None:
    user = world.user("nod@example.com")
    web = Principal.web(user)
    brain = Brain("offline", offline_model(world.rt.settings))
    turn = say(world.rt, web, new_conversation(world.rt, web), brain, "train a model")
    assert turn.reply.startswith("You have no datasets yet") and "/datasets" in turn.reply
    assert turn.proposal is None


def test_the_planner_lists_datasets_jobs_and_bases(tia: Trainer) -> None:
    assert (
        f"Support replies ({tia.support}): prompt_completion, 8 rows"
        in tia.say("list my datasets").reply
    )
    assert tia.smol in tia.say("which models can I train?").reply
    assert tia.say("list my training jobs").reply.startswith("You have no training jobs yet")


@pytest.mark.parametrize(
    "text", ["which models can be trained?", "list trainable models", "can SmolLM2 be trained?"]
)
def test_asking_which_models_are_trainable_lists_the_training_bases(
    tia: Trainer, text: str
) -> None:
    turn = tia.say(text)
    assert turn.reply.startswith("Models you can train:"), turn.reply
    assert tia.smol in turn.reply and RANDOM not in turn.reply
    assert [call["tool"] for call in turn.tool_calls] == ["list_training_bases"]


@pytest.mark.parametrize(
    "text",
    ["list my trained models", "which trained models do I have", "list my fine-tuned models"],
)
def test_the_users_trained_models_are_listed_with_the_models(tia: Trainer, text: str) -> None:
    # A Trained model is a model to run: it is listed with the others, not as a base to train.
    turn = tia.say(text)
    assert turn.reply.startswith("Models you can run:"), turn.reply
    assert [call["tool"] for call in turn.tool_calls] == ["list_models"]


# --- "is it done?" ----------------------------------------------------------------------------


def test_is_it_done_reports_the_newest_of_runs_and_training_jobs(
    tia: Trainer, clock: ManualClock
) -> None:
    bm = tia.world.benchmark(tia.user)
    run = tia.world.do(tia.web, launch.start_run, bm, RANDOM)
    clock.advance(minutes=1)
    job = tia.world.do(tia.web, jobs.start_training, tia.request())
    turn = tia.say("is it done?")
    assert turn.reply.startswith(f"Training job {job.id} (lora of SmolLM2-135M-Instruct (local)")
    assert "queued — not done yet" in turn.reply and "Progress: 0/2 steps." in turn.reply
    assert "Credits: up to 2 credits reserved." in turn.reply
    # The user's words decide when they say which.
    assert tia.say("is my run done?").reply.startswith(f"Run {run.id}")
    clock.advance(minutes=1)
    newer = tia.world.do(tia.web, launch.start_run, bm, RANDOM)
    assert tia.say("is it done?").reply.startswith(f"Run {newer.id}")
    for text in ("is the training done?", "how is my fine-tune going?", f"status of {job.id}"):
        assert tia.say(text).reply.startswith(f"Training job {job.id}"), text


def test_a_finished_job_names_its_trained_model(tia: Trainer) -> None:
    job = tia.world.do(tia.web, jobs.start_training, tia.request())
    with transaction(tia.world.rt, OPERATOR) as ctx:
        row = ctx.session.get(TrainingJob, job.id)
        assert row is not None
        row.status, row.steps_done, row.trained_model_id = "completed", 2, RANDOM
        row.credits_charged = 2
    turn = tia.say("is the training done?")
    assert f"Training job {job.id}" in turn.reply and ": completed." in turn.reply
    assert f"Trained model: {RANDOM}." in turn.reply and "Cost: 2 credits." in turn.reply


def test_cancelling_a_job_is_not_done_from_the_chat(tia: Trainer) -> None:
    job = tia.world.do(tia.web, jobs.start_training, tia.request())
    turn = tia.say(f"cancel the training {job.id}")
    assert f"/training/{job.id}" in turn.reply and "Nothing was done." in turn.reply
    assert tia.jobs()[0].status == "queued"
