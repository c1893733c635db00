"""The turn cap an admin sets while the server runs is the cap the next turn keeps."""

from __future__ import annotations

import pytest
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo

from benchgen.agent import replies
from benchgen.core.clock import ManualClock
from benchgen.core.context import Principal
from benchgen.services import deployment
from tests.agent.scripted import new_conversation, say, think_with
from tests.support import OPERATOR, World


@pytest.mark.both_backends
def test_an_overridden_cap_stops_the_next_turn(
    world: World, api: Principal, clock: ManualClock
) -> None:
    assert world.rt.settings.agent_turn_cap_s > 60
    world.do(OPERATOR, deployment.set_setting, "agent_turn_cap_s", "60")

    def slow(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            clock.advance(seconds=61)  # past the new cap, well within the environment's
            return ModelResponse(parts=[ToolCallPart("list_models", {})])
        return ModelResponse(parts=[TextPart("done")])

    capped = say(world.rt, api, new_conversation(world.rt, api), think_with(slow), "models?")
    assert capped.status == "stopped_at_cap"
    assert capped.reply == replies.capped_reply(60)


@pytest.mark.both_backends
def test_a_raised_cap_lets_the_next_turn_finish(
    world: World, api: Principal, clock: ManualClock
) -> None:
    cap = world.rt.settings.agent_turn_cap_s
    world.do(OPERATOR, deployment.set_setting, "agent_turn_cap_s", str(cap * 2))

    def slow(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            clock.advance(seconds=cap + 120)  # past the old cap and credential: not the new
            return ModelResponse(parts=[ToolCallPart("list_models", {})])
        return ModelResponse(parts=[TextPart("done")])

    done = say(world.rt, api, new_conversation(world.rt, api), think_with(slow), "models?")
    assert done.status == "completed" and done.reply == "done"
