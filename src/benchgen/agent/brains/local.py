"""A GGUF model in-process (xllamacpp) as the agent's brain: tools chosen by schema-bound JSON."""

from __future__ import annotations

import json
from typing import Any

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import ToolDefinition

from benchgen.evals.adapters import local_gguf

MAX_TOKENS = 512
MAX_STRING = 300


def local_model(name: str, threads: int) -> FunctionModel:
    """A brain backed by the GGUF file `name` (or "smollm2"), loaded once per process on
    `threads` CPU threads.

    Small models have no native tool calling through their chat template, so each step asks for
    one JSON object constrained to `{"tool": <name>, "args": {...}}` for one of the tools, or
    `{"tool": "reply", "text": ...}` (see shared notes on local models).
    """

    def think(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        request = {
            "messages": chat_messages(messages, info.instructions),
            "max_tokens": MAX_TOKENS,
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "step", "schema": step_schema(info.function_tools)},
            },
        }
        reply = local_gguf.chat_completion(name, request, threads)
        return parse_step(reply["choices"][0]["message"].get("content") or "")

    return FunctionModel(think, model_name=f"local:{name}")


def step_schema(tools: list[ToolDefinition]) -> dict[str, Any]:
    """One object per tool (its name fixed, its arguments by its own schema), or a reply."""
    options: list[dict[str, Any]] = [
        _object({"tool": {"const": "reply"}, "text": {"type": "string"}}),
    ]
    definitions: dict[str, Any] = {}
    for tool in tools:
        args = dict(tool.parameters_json_schema)
        # Shared shapes (a question) are referenced as #/$defs/…: they must live at the root.
        definitions |= _bounded(args.pop("$defs", {}))
        options.append(_object({"tool": {"const": tool.name}, "args": _bounded(args)}))
    return {"anyOf": options, "$defs": definitions} if definitions else {"anyOf": options}


def _bounded(schema: Any) -> Any:
    """`schema` with every unbounded string given a length limit: the grammar then stops a
    small model that would otherwise repeat itself until it runs out of tokens."""
    if isinstance(schema, list):
        return [_bounded(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    bounded = {key: _bounded(value) for key, value in schema.items()}
    if bounded.get("type") == "string" and "maxLength" not in bounded:
        bounded["maxLength"] = MAX_STRING
    return bounded


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def parse_step(content: str) -> ModelResponse:
    """The model's JSON as a tool call or a reply.

    Raises:
        ValueError: the output is not JSON (a small model rambling past the token limit): the
            turn then fails and says so, rather than showing the user half an object.
    """
    try:
        step = json.loads(content)
    except ValueError:
        raise ValueError("the local model's output was not a complete JSON step") from None
    if not isinstance(step, dict) or step.get("tool") in (None, "reply"):
        text = step.get("text", "") if isinstance(step, dict) else str(step)
        return ModelResponse(parts=[TextPart(str(text) or "(no answer)")])
    args = step.get("args") if isinstance(step.get("args"), dict) else {}
    return ModelResponse(parts=[ToolCallPart(str(step["tool"]), args)])


_ERROR_OUTCOMES = ("failed", "retried")


def chat_messages(messages: list[ModelMessage], instructions: str | None) -> list[dict[str, str]]:
    """pydantic-ai messages as OpenAI-style chat dicts; tool results go back as user turns."""
    chat = [{"role": "system", "content": instructions or ""}]
    for message in messages:
        if isinstance(message, ModelResponse):
            chat.append({"role": "assistant", "content": _said(message)})
            continue
        assert isinstance(message, ModelRequest)
        for part in message.parts:
            if isinstance(part, UserPromptPart):
                chat.append({"role": "user", "content": str(part.content)})
            elif isinstance(part, ToolReturnPart):
                result = json.dumps(part.content, default=str)
                # pydantic-ai returns a call refused for its arguments (or that raised) as the
                # call's own return: labelled a result, the model went on as if it had worked.
                refused = getattr(part, "outcome", "success") in _ERROR_OUTCOMES
                label = f"Error from {part.tool_name}" if refused else f"Result of {part.tool_name}"
                chat.append({"role": "user", "content": f"{label}: {result}"})
            elif isinstance(part, RetryPromptPart):
                chat.append({"role": "user", "content": f"Error: {part.model_response()}"})
    return chat


def _said(response: ModelResponse) -> str:
    parts = []
    for part in response.parts:
        if isinstance(part, TextPart):
            parts.append(json.dumps({"tool": "reply", "text": part.content}))
        elif isinstance(part, ToolCallPart):
            parts.append(json.dumps({"tool": part.tool_name, "args": part.args_as_dict()}))
    return "\n".join(parts)
