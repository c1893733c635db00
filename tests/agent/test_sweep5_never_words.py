"""Every never-action, asked in a few natural ways, gets the refusal and its page offline."""

from __future__ import annotations

import re

import pytest

from benchgen.agent.never import NEVER, SESSION_ONLY, refusal
from benchgen.core.context import Principal
from benchgen.core.permissions import Action
from benchgen.services.benchmarks import lifecycle
from tests.agent.test_offline_planner import Chat
from tests.support import QA, World

SUMS = {**QA, "title": "Sums"}
ASKED: dict[Action, list[str]] = {
    Action.BENCHMARK_DELETE: ["delete benchmark Sums", "please remove the Sums benchmark"],
    Action.BENCHMARK_UNPUBLISH: [
        "unpublish Sums",
        "make Sums private again",
        "stop publishing Sums",
    ],
    Action.MODEL_DELETE: ["delete model mdl_abc", "remove my model mdl_abc"],
    Action.DATASET_DELETE: ["delete dataset ds_abc", "erase the dataset ds_abc"],
    Action.TRAINING_DELETE: ["delete training job tr_abc", "remove the training job tr_abc"],
    Action.RUN_EDIT_SCORE: ["change the score of run_abc to 100", "set run_abc's accuracy to 1"],
    Action.PHASES_MANAGE: ["add a phase to Sums", "create a new task in Sums"],
    Action.ACCESS_MANAGE: ["invite bo@example.com to Sums", "whitelist @example.com on Sums"],
    Action.JUDGE_CONFIGURE: ["set up the AI judge for Sums", "use an LLM judge on Sums"],
    Action.PARTICIPANTS_EMAIL: [
        "email the participants of Sums",
        "write to the participants of Sums",
    ],
    Action.BILLING_MANAGE: ["buy more credits", "show my invoices"],
    Action.TOKENS_MANAGE: ["create an API token", "revoke my token"],
    Action.LEADERBOARD_MANAGE: [
        "add run_abc to the leaderboard",
        "take run_abc off the leaderboard",
    ],
    Action.NOTIFICATIONS_MANAGE: ["email me when my run finishes", "set up a webhook for my runs"],
    Action.BENCHMARK_JOIN: [
        "join benchmark Sums",
        "join Sums",
        "can I join Sums?",
        "sign me up for Sums",
        "I want to take part in Sums",
        "make me a participant of Sums",
    ],
    Action.RUN_QUOTA_MANAGE: [
        "change the run quota of Sums",
        "raise the quota on Sums",
        "set the daily run limit of Sums to 20",
        "let others run Sums 50 times a day",
        "allow more runs per day on Sums",
    ],
}


def test_every_never_action_is_asked() -> None:
    assert set(ASKED) == set(NEVER) | set(SESSION_ONLY)


def _object_id(text: str, benchmark_id: str) -> str:
    """The id the refusal's link names: the one written, or the benchmark called Sums."""
    written = re.search(r"\b(?:run|mdl|ds|tr)_abc\b", text)
    if written:
        return written.group(0)
    return benchmark_id if "Sums" in text else ""


@pytest.mark.parametrize("action", list(ASKED), ids=str)
def test_a_never_action_is_refused_with_its_page(world: World, action: Action) -> None:
    """ "join benchmark Sums" and "change the run quota of Sums" got "I did not understand"
    and the help: docs/permissions.md says the agent cannot, and links where a person can."""
    chat = Chat(world)
    if action is Action.BENCHMARK_JOIN:
        # One joins someone else's benchmark, here a published one.
        bo = Principal.web(world.user("bo@example.com"))
        bm = world.do(bo, lifecycle.create_benchmark, SUMS).benchmark.id
        world.do(bo, lifecycle.publish_benchmark, bm)
    else:
        bm = chat.benchmark(SUMS)
    for text in ASKED[action]:
        turn = chat.say(text)
        assert turn.reply == refusal(world.rt.settings, action, _object_id(text, bm)), text


def test_the_new_refusals_link_the_pages_people_use(world: World) -> None:
    settings = world.rt.settings
    assert refusal(settings, Action.BENCHMARK_JOIN, "bm_1").endswith("/benchmarks/bm_1")
    quota = refusal(settings, Action.RUN_QUOTA_MANAGE, "bm_1")
    assert quota.endswith("/benchmarks/bm_1/settings") and "run quota" in quota
