"""Scripted brains and a chat helper for agent tests: no language model is ever called."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from benchgen.agent.brains import Brain
from benchgen.agent.messages import MessageIn
from benchgen.agent.turn import Started, claim_turn, complete_turn, start_turn
from benchgen.core.context import Principal
from benchgen.services.chat import conversations
from benchgen.services.chat.conversations import TurnView
from benchgen.services.runtime import Runtime, transaction

Step = str | Sequence[tuple[str, dict[str, Any]]]


class Script:
    """A brain that plays `steps` in order: a list of tool calls, or a final text.

    Every prompt it receives (the messages, which hold every tool result) is kept in `seen`,
    so tests can scan what a model would have been shown.
    """

    def __init__(self, steps: Sequence[Step] = ()) -> None:
        self.steps = list(steps)
        self.seen: list[str] = []

    def brain(self) -> Brain:
        return Brain("scripted", FunctionModel(self._think, model_name="scripted"))

    def _think(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.seen.append(repr(messages) + repr(info.instructions))
        step = self.steps.pop(0) if self.steps else "done"
        if isinstance(step, str):
            return ModelResponse(parts=[TextPart(step)])
        return ModelResponse(parts=[ToolCallPart(name, args) for name, args in step])


def last_returns(messages: list[ModelMessage]) -> list[ToolReturnPart]:
    """The tool results of the newest request."""
    last = messages[-1]
    assert isinstance(last, ModelRequest)
    return [part for part in last.parts if isinstance(part, ToolReturnPart)]


def think_with(fn: Callable[[list[ModelMessage], AgentInfo], ModelResponse]) -> Brain:
    """A brain from a plain function."""
    return Brain("scripted", FunctionModel(fn, model_name="scripted"))


def new_conversation(rt: Runtime, principal: Principal) -> str:
    with transaction(rt, principal) as ctx:
        return conversations.create_conversation(ctx).id


def say(
    rt: Runtime,
    principal: Principal,
    conversation_id: str,
    brain: Brain,
    text: str | None = None,
    action: dict[str, Any] | None = None,
) -> TurnView:
    """One whole turn, synchronously, as the API would run it."""
    message = MessageIn.model_validate({"text": text} if action is None else {"action": action})
    return complete_turn(begin_turn(rt, principal, conversation_id, message), brain)


def begin_turn(
    rt: Runtime, principal: Principal, conversation_id: str, message: MessageIn
) -> Started:
    """Claim a turn and start it at once, as a thread of the runner's pool takes it up; a
    refusal to start is raised, for the test to see."""
    return start_turn(claim_turn(rt, principal, conversation_id, message))
