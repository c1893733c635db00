"""The training proposal through a scripted brain (A7–A12): the preview is the platform's plan,
nothing starts before approval, and execution checks everything again (A9)."""

from __future__ import annotations

from typing import Any

import pytest

from benchgen.core.config import Settings
from benchgen.core.errors import Conflict
from benchgen.services.chat import proposals
from benchgen.services.chat.conversations import TurnView
from benchgen.services.datasets import datasets
from benchgen.services.training import jobs, plans
from tests.agent.scripted import Script, new_conversation, say
from tests.agent.training_support import Trainer, fixed_gpus
from tests.support import World


@pytest.fixture
def settings(settings: Settings) -> Settings:
    # A fixed GPU pool, so plans never depend on what torch finds on the test machine.
    return fixed_gpus(settings)


@pytest.fixture
def tia(world: World) -> Trainer:
    return Trainer(world)


def _approve(turn: TurnView) -> dict[str, Any]:
    assert turn.status == "awaiting_approval", turn.reply
    return dict(turn.buttons[0]["action"])


# --- the proposal through a scripted brain ----------------------------------------------------


def test_the_preview_is_the_platforms_plan_and_nothing_starts(tia: Trainer) -> None:
    before = tia.balance()
    turn = tia.propose(tia.request(epochs=3, learning_rate=1e-4))
    assert turn.status == "awaiting_approval" and turn.proposal is not None, turn.reply
    assert turn.proposal.kind == "start_training"
    plan = tia.world.do(tia.web, plans.plan_training, tia.request(epochs=3, learning_rate=1e-4))
    # A7: exactly the plan the platform computes from those arguments, rendered by code.
    assert turn.proposal.preview["text"] == plan.text() and plan.text() in turn.reply
    for shown in (
        f"lora of 'SmolLM2-135M-Instruct (local)' ({plan.base_model_id},",
        f"Dataset: 'Support replies' ({plan.dataset_id}, 8 rows",
        "epochs=3",
        "learning_rate=0.0001",
        "Compute: CPU: free now (1 of 1)",
        f"Estimated cost: {plan.estimated_credits} credits",
        f"balance {before}",
        "Estimated duration: about",
    ):
        assert shown in turn.reply, shown
    assert plan.estimated_credits == plan.total_steps == 6  # 8 rows / batch 4 × 3 epochs
    # A8: the hash binds the validated request with its defaults and the credits shown.
    arguments = turn.proposal.arguments
    assert arguments["max_credits"] == plan.estimated_credits
    assert arguments["hyperparameters"]["batch_size"] == 4 and arguments["job_type"] == "lora"
    assert tia.jobs() == [] and tia.balance() == before


def test_yes_starts_exactly_one_queued_job_with_its_credits_reserved(tia: Trainer) -> None:
    before = tia.balance()
    turn = tia.propose(tia.request(epochs=2))
    estimate = turn.proposal.preview["estimated_credits"] if turn.proposal else None
    done = tia.say("yes")
    assert done.status == "completed", done.reply
    [job] = tia.jobs()
    assert done.reply.startswith(f"Started training job {job.id} (queued; {estimate} credits")
    assert job.status == "queued" and job.estimated_credits == estimate == 4
    assert (job.base_model_id, job.dataset_id, job.hyperparameters["epochs"]) == (
        tia.smol,
        tia.support,
        2,
    )
    assert tia.balance() == before - 4  # reserved, settled when the job ends
    # Approval is single use: approving again starts nothing.
    with pytest.raises(Conflict, match="already carried out"):
        say(tia.world.rt, tia.api, tia.conv, Script().brain(), action=_approve(turn))
    assert len(tia.jobs()) == 1


def test_the_approve_button_starts_what_was_shown(tia: Trainer) -> None:
    turn = tia.propose(tia.request())
    done = say(tia.world.rt, tia.api, tia.conv, Script().brain(), action=_approve(turn))
    assert done.reply.startswith("Started training job")
    assert len(tia.jobs()) == 1


@pytest.mark.parametrize("decline", ["no, not now", "button"])
def test_a_decline_starts_nothing(tia: Trainer, decline: str) -> None:
    before = tia.balance()
    turn = tia.propose(tia.request())
    assert turn.proposal is not None
    if decline == "button":
        action = dict(turn.buttons[1]["action"])
        reply = say(tia.world.rt, tia.api, tia.conv, Script().brain(), action=action)
        assert reply.reply.startswith("Declined. Nothing was done (start training")
    else:
        tia.say(decline, Script(["OK."]).brain())
    shown = tia.world.ctx_call(tia.web, lambda c: proposals.get_proposal(c, turn.proposal.id))
    assert shown.status == "declined"
    assert tia.jobs() == [] and tia.balance() == before


def test_a_dataset_deleted_before_approval_fails_cleanly(tia: Trainer) -> None:
    before = tia.balance()
    turn = tia.propose(tia.request())
    assert turn.status == "awaiting_approval"
    tia.world.do(tia.web, datasets.delete_dataset, tia.support)
    done = tia.say("yes")
    # A9: checked again at execution; nothing was created or reserved.
    assert done.reply == "Approved, but it did not happen: No such dataset. Nothing was changed."
    assert tia.jobs() == [] and tia.balance() == before
    assert done.proposal is not None and done.proposal.status == "failed"


def test_credits_spent_before_approval_fail_cleanly(world: World) -> None:
    tia = Trainer(world, credits_=150)
    turn = tia.propose(tia.request(epochs=50))  # 100 steps, 100 credits: affordable now
    assert turn.status == "awaiting_approval", turn.reply
    # Meanwhile the same credits go to a job launched in the web app.
    world.do(tia.web, jobs.start_training, tia.request(epochs=50))
    done = tia.say("yes")
    assert done.reply == (
        "Approved, but it did not happen: This needs up to 100 credits but the balance is 50. "
        "Nothing was changed."
    )
    assert len(tia.jobs()) == 1 and tia.balance() == 50


def test_an_unaffordable_plan_is_not_proposed(world: World) -> None:
    tia = Trainer(world, credits_=10)
    turn = tia.propose(tia.request(epochs=50))
    assert turn.status == "completed" and turn.proposal is None
    assert "insufficient_credits" in str(turn.tool_calls)


def test_without_the_train_scope_the_agent_cannot_propose(world: World) -> None:
    tia = Trainer(world)
    reader = world.api(world.token(tia.user, ["read", "runs"]))
    conv = new_conversation(world.rt, reader)
    script = Script([[("propose_training", tia.request())], "done"])
    turn = say(world.rt, reader, conv, script.brain(), "train")
    assert turn.proposal is None
    assert turn.tool_calls[0]["error"] == "permission_denied"
    assert tia.jobs() == []


def test_tool_arguments_are_bounded(tia: Trainer) -> None:
    hostile = {**tia.request(epochs=10**9), "name": "x" * 5000}
    script = Script([[("propose_training", hostile)], [("propose_training", hostile)], "gave up"])
    turn = tia.say("train", script.brain())
    assert turn.proposal is None and tia.jobs() == []
