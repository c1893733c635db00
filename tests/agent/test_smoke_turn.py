"""A scripted turn: propose, approve, execute; the credential dies with the turn."""

from __future__ import annotations

import pytest

from benchgen.core.context import Principal
from tests.agent.scripted import Script, new_conversation, say
from tests.support import World

QUESTIONS = [{"prompt": "2+2?", "answer": "4"}, {"prompt": "3+3?", "answer": "6"}]


@pytest.mark.both_backends
def test_propose_then_approve_creates(world: World) -> None:
    ana = world.user("ana@example.com")
    web = Principal.web(ana)
    conv = new_conversation(world.rt, web)
    args = {"title": "Sums", "format": "qa", "questions": QUESTIONS}
    script = Script([[("propose_create_benchmark", args)]])
    turn = say(world.rt, web, conv, script.brain(), "make a sums benchmark")
    assert turn.status == "awaiting_approval", turn.reply
    assert turn.proposal is not None
    assert '"2+2?"' in turn.reply
    approve = turn.buttons[0]["action"]
    done = say(world.rt, web, conv, script.brain(), action=approve)
    assert done.status == "completed", done.reply
    assert "Created benchmark bm_" in done.reply


def test_calls_asked_together_are_made_and_recorded_in_the_order_asked(world: World) -> None:
    """Run side by side, calls asked in one step were recorded in whichever order their threads
    started: the transcript (and a test reading it) changed from one turn to the next."""
    ana = world.user("ana@example.com")
    web = Principal.web(ana)
    asked = [("list_models", {}), ("list_benchmarks", {}), ("my_account", {}), ("list_runs", {})]
    for _ in range(5):
        script = Script([asked * 2, "done"])
        turn = say(world.rt, web, new_conversation(world.rt, web), script.brain(), "look around")
        assert [call["tool"] for call in turn.tool_calls] == [name for name, _ in asked * 2]
