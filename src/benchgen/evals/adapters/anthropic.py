"""Anthropic's Messages API over httpx (no SDK: one client shape for every hosted model)."""

from __future__ import annotations

from typing import Any

from benchgen.evals.adapters.transport import (
    DEFAULT_CONCURRENCY,
    MAX_REPLY_BYTES,
    HttpPool,
    no_answer_text,
    not_an_answer,
    token_count,
)
from benchgen.evals.redact import redact_answer
from benchgen.evals.types import Completion, FatalModelError, Item, ModelSpec

DEFAULT_BASE_URL = "https://api.anthropic.com/v1"
API_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 1024
# Stop reasons that end a reply early: with no text before them, there is no answer.
_CUT_SHORT = ("max_tokens", "refusal")  # a tuple: a server's reason may be unhashable


class AnthropicAdapter:
    """Calls `{base_url}/messages` with one user message at temperature 0 by default.

    `spec.base_url` defaults to "https://api.anthropic.com/v1". Params as for the
    OpenAI-compatible adapter: `timeout_s`, `max_tokens`, `concurrency`, `max_reply_bytes`,
    and a run's `temperature`, `top_p`, `stop` and `system_prompt` (the Messages API has no
    seed: runs refuse one at the estimate); connections are checked against
    `spec.host_allowlist` as there.
    """

    max_in_flight: int | None = None  # the endpoint answers requests in parallel

    def __init__(self, spec: ModelSpec) -> None:
        if not spec.api_key:
            raise FatalModelError("an Anthropic model needs an API key")
        self._url = (spec.base_url or DEFAULT_BASE_URL).rstrip("/") + "/messages"
        self._model = spec.name
        self._max_tokens = int(spec.params.get("max_tokens", DEFAULT_MAX_TOKENS))
        self._params = spec.params
        headers = {"x-api-key": spec.api_key, "anthropic-version": API_VERSION}
        # An endpoint that echoes the key in its reply must not put it in a stored answer.
        self._secrets = (spec.api_key,)
        self._http = HttpPool(
            float(spec.params.get("timeout_s", 60)),
            int(spec.params.get("concurrency", DEFAULT_CONCURRENCY)),
            headers,
            secrets=self._secrets,
            allowlist=spec.host_allowlist,
            max_reply_bytes=int(spec.params.get("max_reply_bytes", MAX_REPLY_BYTES)),
        )

    async def complete(self, item: Item, prompt: str) -> Completion:
        """Send the prompt; `HttpPool.post_json` says which failures are retryable."""
        payload: dict[str, Any] = {
            "model": self._model,
            "max_tokens": self._max_tokens,
            "temperature": self._params.get("temperature", 0),
            "messages": [{"role": "user", "content": prompt}],
        }
        if self._params.get("system_prompt"):
            payload["system"] = str(self._params["system_prompt"])
        if self._params.get("top_p") is not None:
            payload["top_p"] = self._params["top_p"]
        if self._params.get("stop"):
            payload["stop_sequences"] = list(self._params["stop"])
        body = await self._http.post_json(self._url, payload)
        usage = body.get("usage")
        return Completion(
            text=redact_answer(_reply_text(body, self._secrets), self._secrets),
            input_tokens=token_count(usage, "input_tokens"),
            output_tokens=token_count(usage, "output_tokens"),
        )

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._http.aclose()


def _reply_text(body: dict[str, Any], secrets: tuple[str, ...]) -> str:
    """The answer in a Messages reply: its text blocks together (thinking and tool-use blocks
    are not the answer).

    Raises:
        RetryableError: the reply carries an error object instead.
        FatalModelError: the reply is no message, or holds no answer: tool use only, or no text
            written before the token limit or a refusal stopped it (each was once read as an
            empty answer, scored wrong).
    """
    blocks = body.get("content")
    if not isinstance(blocks, list):
        raise not_an_answer(body, "an Anthropic message", secrets)
    texts = [
        text
        for block in blocks
        if isinstance(block, dict) and isinstance(text := block.get("text"), str)
    ]
    text = "".join(texts)
    reason = body.get("stop_reason")
    if text or (texts and reason not in _CUT_SHORT):
        return text
    if any(isinstance(block, dict) and block.get("type") == "tool_use" for block in blocks):
        raise FatalModelError("reply is a tool call, not an answer")
    raise no_answer_text("stop_reason", reason)
