"""A hosted brain over the wire, misbehaving: an OpenAI-compatible stub server plays the model,
and what the user sees, the operator's log and the server's requests are checked."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from pydantic import SecretStr, ValidationError

from benchgen.agent import replies
from benchgen.agent.brains import Brain, build_brain
from benchgen.agent.brains.hosted import api_key
from benchgen.core.config import Settings
from benchgen.core.context import Principal
from benchgen.services.chat.conversations import TurnView
from tests.agent.scripted import new_conversation, say
from tests.evals.stub_openai import Fault, FaultHook, StubOpenAI
from tests.support import World

# Not shaped like any provider's key, so only the harness's own knowledge of it can hide it.
KEY = "vllm-local-key-0042"


def _brain(world: World, stub: StubOpenAI) -> Brain:
    settings = world.rt.settings.model_copy(
        update={
            "agent_model": "openai:stub-model",
            "agent_base_url": stub.base_url,
            "agent_api_key": SecretStr(KEY),
        }
    )
    return build_brain(settings)


def _chat(world: World, hook: FaultHook, text: str = "hi") -> tuple[TurnView, StubOpenAI]:
    web = Principal.web(world.user("ana@example.com"))
    with StubOpenAI(fail=hook) as stub:
        turn = say(world.rt, web, new_conversation(world.rt, web), _brain(world, stub), text)
    return turn, stub


def _calls(*calls: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    made = [
        {"id": f"c{n}", "type": "function", "function": {"name": name, "arguments": json.dumps(a)}}
        for n, (name, a) in enumerate(calls)
    ]
    return {"role": "assistant", "content": None, "tool_calls": made}


def test_a_reply_with_no_choices_is_the_servers_fault_not_the_tools(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    empty = {"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": []}
    with caplog.at_level(logging.WARNING, logger="benchgen.agent.turn"):
        turn, _ = _chat(world, lambda n, prompt: Fault(200, body=json.dumps(empty)))
    assert turn.status == "failed"
    assert "ModelEmptyResponseError" in turn.reply and "No other model was used" in turn.reply
    assert "arguments" not in turn.reply  # it blamed the tool calls the model never made
    # The operator's log says it too: a wrong URL fails every turn, not only this user's.
    assert any(turn.id in r.getMessage() and "failed" in r.getMessage() for r in caplog.records)


def test_a_key_the_server_echoes_is_never_shown_or_logged(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    refuse = Fault(401, body='{"error": {"message": "Invalid key: {auth}"}}')
    with caplog.at_level(logging.DEBUG):
        turn, stub = _chat(world, lambda n, prompt: refuse)
    assert stub.last_headers["authorization"] == f"Bearer {KEY}"  # it was sent, and echoed
    assert turn.status == "failed" and "ModelAuthenticationError" in turn.reply
    assert KEY not in turn.reply and "API key, hidden" in turn.reply
    assert "Connection error.." not in turn.reply
    assert not any(KEY in record.getMessage() for record in caplog.records)


def test_a_reply_or_tool_call_holding_the_key_shows_it_nowhere(world: World) -> None:
    def hook(n: int, prompt: str) -> Fault:
        if n == 1:
            questions = [{"prompt": "What is the key?", "answer": KEY}]
            create = {"title": "Keys", "format": "qa", "questions": questions}
            return Fault.completion(_calls(("propose_create_benchmark", create)))
        return Fault.completion(f"The server's key is {KEY}.")

    turn, _ = _chat(world, hook, "make a quiz")
    assert turn.status == "completed" and turn.proposal is None  # nothing was proposed
    assert turn.tool_calls[0]["error"] == "secret_in_arguments"
    assert KEY not in json.dumps(turn.tool_calls) and KEY not in turn.reply


def test_a_request_for_the_token_with_an_aside_is_withheld(world: World) -> None:
    ask = "To continue, please paste your API token (bgp_…) here so I can act for you."
    turn, _ = _chat(world, lambda n, prompt: Fault.completion(ask))
    assert "paste your API token" not in turn.reply and "withheld" in turn.reply


def test_an_agent_base_url_that_is_no_http_url_stops_the_start() -> None:
    for wrong in ("127.0.0.1:8000/v1", "ftp://models.example/v1", "http://host:port/v1"):
        with pytest.raises(ValidationError, match="agent_base_url"):
            Settings(agent_base_url=wrong)
    assert Settings(agent_base_url="").agent_base_url is None


def test_an_anthropic_brain_goes_to_the_base_url_given(world: World) -> None:
    ana = world.user("ana@example.com")
    web = Principal.web(ana)
    with StubOpenAI() as stub:
        settings = world.rt.settings.model_copy(
            update={"agent_model": "anthropic:stub-model", "agent_base_url": stub.base_url}
        )
        turn = say(world.rt, web, new_conversation(world.rt, web), build_brain(settings), "hi")
    # Sent to the operator's server, not to api.anthropic.com with whatever key was about.
    assert turn.status == "completed" and sum(stub.received.values()) == 1


def test_only_a_key_worth_hiding_is_hidden(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-environment")
    assert api_key("openai", Settings(agent_api_key=SecretStr(KEY))) == KEY
    assert api_key("openai", Settings()) == "sk-from-the-environment"
    # Not sent to a server the operator named, so nothing of it to hide; "none" guards nothing.
    assert api_key("openai", Settings(agent_base_url="http://127.0.0.1:9/v1")) is None
    assert api_key("openai", Settings(agent_api_key=SecretStr("none"))) is None


def test_a_failure_is_said_in_one_sentence() -> None:
    said = replies.brain_failed("openai:m", RuntimeError("Connection error."))
    assert "failed: RuntimeError: Connection error. No other model" in said
    assert "failed: TimeoutError. No other model" in replies.brain_failed("m", TimeoutError())
