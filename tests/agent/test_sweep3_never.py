"""A13 asked in a later clause of a request the offline brain would otherwise act on."""

from __future__ import annotations

import pytest

from benchgen.agent.never import refusal
from benchgen.core.permissions import Action
from benchgen.services.benchmarks import lifecycle
from tests.agent.test_offline_planner import Chat
from tests.support import World


@pytest.mark.parametrize(
    "text",
    [
        "publish {bm} and then delete it",
        "publish Capitals and delete it",
        "publish {bm}, then delete it",
        "publish Capitals and then get rid of it",
    ],
)
def test_a_delete_after_a_publish_is_refused_not_passed_over(world: World, text: str) -> None:
    """The publish was proposed and the delete went without a word (A13: say it cannot)."""
    chat = Chat(world)
    bm = chat.benchmark()
    turn = chat.say(text.format(bm=bm))
    assert turn.proposal is None, turn.reply
    assert turn.reply == refusal(world.rt.settings, Action.BENCHMARK_DELETE, bm)
    assert world.do(chat.web, lifecycle.get_benchmark, bm).visibility == "private"


@pytest.mark.parametrize(
    "text", ["add a question to {bm} and then delete it", "run random on {bm} and delete it"]
)
def test_a_later_delete_of_a_question_or_run_is_no_benchmark_delete(
    world: World, text: str
) -> None:
    chat = Chat(world)
    bm = chat.benchmark()
    turn = chat.say(text.format(bm=bm))
    assert turn.reply != refusal(world.rt.settings, Action.BENCHMARK_DELETE, bm)
