"""Endpoints whose 200 replies hold no answer, an error instead, or the API key: each is recorded
as an error (or the key redacted), never silently as an empty answer."""

from __future__ import annotations

import json
from typing import Any

import pytest

from benchgen.evals.adapters.anthropic import AnthropicAdapter
from benchgen.evals.adapters.openai_compat import OpenAICompatAdapter
from benchgen.evals.engine import run_items
from benchgen.evals.types import Adapter, Answer, FatalModelError, Item, ModelSpec, RetryableError
from tests.evals.test_hostile_endpoints import Canned, canned

pytestmark = pytest.mark.anyio
__all__ = ["canned"]  # the loopback server's fixture, used by name

KEY = "sk-sweep3-secret-key-0123456789"
LOOPBACK = frozenset({"127.0.0.1"})
TOOL_CALL = [{"id": "1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]


def _answers(stub: Canned, body: dict[str, Any]) -> None:
    """Make `stub` answer every request with `body` as JSON, status 200."""
    stub.answer("200 OK", json.dumps(body).encode())


def _adapter(kind: str, url: str) -> Adapter:
    spec = ModelSpec(kind, "m", url, KEY, host_allowlist=LOOPBACK)
    return OpenAICompatAdapter(spec) if kind == "openai_compat" else AnthropicAdapter(spec)


async def _text(kind: str, url: str) -> str:
    adapter = _adapter(kind, url)
    try:
        return (await adapter.complete(Item(0, "q"), "q")).text
    finally:
        await adapter.aclose()


def _choice(message: dict[str, Any], reason: object = "stop") -> dict[str, Any]:
    return {"choices": [{"message": message, "finish_reason": reason}]}


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (_choice({"content": 42}), "no answer text"),
        (_choice({"content": None}), "no answer text"),
        (_choice({"content": None}, "content_filter"), "finish_reason 'content_filter'"),
        (_choice({"content": ""}, "length"), "finish_reason 'length'"),
        (_choice({"content": [1, None, {"type": "image_url"}]}), "no answer text"),
        (_choice({"content": None, "tool_calls": TOOL_CALL}, "tool_calls"), "a tool call"),
        (_choice({"content": "", "tool_calls": TOOL_CALL}, "tool_calls"), "a tool call"),
        (_choice({"content": None}, ["length"]), "no answer text"),
    ],
)
async def test_an_openai_reply_without_an_answer_is_an_error_not_an_empty_answer(
    canned: tuple[Canned, str], body: dict[str, Any], message: str
) -> None:
    stub, url = canned
    _answers(stub, body)
    with pytest.raises(FatalModelError, match=message):
        await _text("openai_compat", url)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"content": [], "stop_reason": "max_tokens"}, "stop_reason 'max_tokens'"),
        ({"content": [{"type": "thinking", "thinking": "hm"}], "stop_reason": "refusal"}, "no"),
        ({"content": [{"type": "tool_use", "id": "1", "name": "f", "input": {}}]}, "a tool call"),
        ({"content": [{"type": "text", "text": ""}], "stop_reason": "max_tokens"}, "no answer"),
    ],
)
async def test_an_anthropic_reply_without_an_answer_is_an_error_not_an_empty_answer(
    canned: tuple[Canned, str], body: dict[str, Any], message: str
) -> None:
    stub, url = canned
    _answers(stub, body)
    with pytest.raises(FatalModelError, match=message):
        await _text("anthropic", url)


async def test_a_refusal_is_the_models_answer_and_an_empty_turn_stays_empty(
    canned: tuple[Canned, str],
) -> None:
    stub, url = canned
    _answers(stub, _choice({"content": None, "refusal": "I cannot help with that."}))
    assert await _text("openai_compat", url) == "I cannot help with that."
    _answers(stub, _choice({"content": ""}))
    assert await _text("openai_compat", url) == ""


@pytest.mark.parametrize(
    ("kind", "body"),
    [
        ("openai_compat", {"error": {"message": f"upstream overloaded ({KEY})", "code": 502}}),
        ("anthropic", {"type": "error", "error": {"type": "overloaded", "message": KEY}}),
    ],
)
async def test_an_error_object_in_a_200_reply_is_retryable_and_shown_without_the_key(
    canned: tuple[Canned, str], kind: str, body: dict[str, Any]
) -> None:
    """OpenRouter answers 200 with an error object when its upstream fails: the question
    failed for good, "not an OpenAI chat completion", with the server's reason dropped."""
    stub, url = canned
    _answers(stub, body)
    with pytest.raises(RetryableError, match="the endpoint answered with an error") as raised:
        await _text(kind, url)
    assert KEY not in str(raised.value) and "[redacted]" in str(raised.value)


@pytest.mark.parametrize(
    ("kind", "body", "shown"),
    [
        (
            "openai_compat",
            _choice({"content": f"You sent the key {KEY}, sk-example-1234"}),
            "You sent the key [redacted], sk-example-1234",  # the answer's own example stays
        ),
        (
            "anthropic",
            {"content": [{"type": "text", "text": f"You sent the key {KEY}"}]},
            "You sent the key [redacted]",
        ),
    ],
)
async def test_a_key_the_endpoint_echoes_in_its_answer_is_redacted(
    canned: tuple[Canned, str], kind: str, body: dict[str, Any], shown: str
) -> None:
    """The reply is stored and shown (to everyone, for a published run on a platform model)."""
    stub, url = canned
    _answers(stub, body)
    assert await _text(kind, url) == shown


async def test_a_run_records_a_reply_without_an_answer_as_an_error(
    canned: tuple[Canned, str],
) -> None:
    stub, url = canned
    _answers(stub, _choice({"content": None, "tool_calls": TOOL_CALL}, "tool_calls"))
    adapter = _adapter("openai_compat", url)
    answers: list[Answer] = []
    try:
        report = await run_items(
            adapter, [(Item(0, "q"), "q")], on_batch=answers.extend, secrets=(KEY,)
        )
    finally:
        await adapter.aclose()
    assert (report.done, report.errors) == (0, 1)
    assert answers[0].raw is None and answers[0].error == "reply is a tool call, not an answer"


async def test_a_placeholder_key_for_a_local_server_is_left_in_the_answer(
    canned: tuple[Canned, str],
) -> None:
    """Local servers take any key ("EMPTY", "ollama"): the answer that names one is the answer."""
    stub, url = canned
    _answers(stub, _choice({"content": "ANSWER: ollama"}))
    spec = ModelSpec("openai_compat", "m", url, "ollama", host_allowlist=LOOPBACK)
    adapter = OpenAICompatAdapter(spec)
    try:
        assert (await adapter.complete(Item(0, "q"), "q")).text == "ANSWER: ollama"
    finally:
        await adapter.aclose()
