"""Any OpenAI-compatible chat endpoint (OpenAI, vLLM, Ollama, llama.cpp server…) over httpx."""

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

DEFAULT_MAX_TOKENS = 1024
_SEEDS = 2**31  # seeds 0 to 2**31 - 1
# Finish reasons that stop a reply early: with no text before them, there is no answer.
_CUT_SHORT = ("length", "content_filter")  # a tuple: a server's reason may be unhashable


class OpenAICompatAdapter:
    """Calls `{base_url}/chat/completions` with one user message and greedy decoding.

    Params read from `spec.params`: `timeout_s` (60), `max_tokens` (1024), `concurrency`
    (64: the most connections; keep it at least the engine's concurrency) and
    `max_reply_bytes` (4 MiB: a longer reply fails its question); a run's generation
    settings `temperature` (0), `top_p`, `stop`, `seed` (plus the sample's number, so samples
    differ) and `system_prompt`. Connections go only to addresses that pass netguard's rules
    with `spec.host_allowlist`.
    """

    max_in_flight: int | None = None  # the endpoint answers requests in parallel

    def __init__(self, spec: ModelSpec) -> None:
        if not spec.base_url:
            raise FatalModelError("an OpenAI-compatible model needs a base_url")
        self._url = spec.base_url.rstrip("/") + "/chat/completions"
        self._model = spec.name
        self._max_tokens = int(spec.params.get("max_tokens", DEFAULT_MAX_TOKENS))
        self._params = spec.params
        headers = {"Authorization": f"Bearer {spec.api_key}"} if spec.api_key else {}
        # An endpoint that echoes the key in its reply must not put it in a stored answer.
        self._secrets = (spec.api_key,) if spec.api_key else ()
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
            "messages": chat_messages(self._params, prompt),
            "max_tokens": self._max_tokens,
            "temperature": self._params.get("temperature", 0),
        }
        payload |= sampling_fields(self._params, item.sample)
        body = await self._http.post_json(self._url, payload)
        usage = body.get("usage")
        return Completion(
            text=redact_answer(_message_text(body, self._secrets), self._secrets),
            input_tokens=token_count(usage, "prompt_tokens"),
            output_tokens=token_count(usage, "completion_tokens"),
        )

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._http.aclose()


def chat_messages(params: dict[str, Any], prompt: str) -> list[dict[str, str]]:
    """The user's prompt, after the run's system prompt when it has one."""
    system = params.get("system_prompt")
    messages = [{"role": "system", "content": str(system)}] if system else []
    return [*messages, {"role": "user", "content": prompt}]


def sampling_fields(params: dict[str, Any], sample: int) -> dict[str, Any]:
    """`top_p`, `stop` and `seed` in the OpenAI shape, only those the run set."""
    fields: dict[str, Any] = {}
    if params.get("top_p") is not None:
        fields["top_p"] = params["top_p"]
    if params.get("stop"):
        fields["stop"] = list(params["stop"])
    if params.get("seed") is not None:
        # One seed for every sample would make the samples one answer repeated. Wrapped to stay
        # a signed 32-bit integer, the seeds providers take: the highest a run may set, plus a
        # sample's number, went past it and failed every later sample's request.
        fields["seed"] = (int(params["seed"]) + sample) % _SEEDS
    return fields


def _message_text(body: dict[str, Any], secrets: tuple[str, ...]) -> str:
    """The answer in a chat completion: its text, or the model's own words for a refusal.

    Raises:
        RetryableError: the reply carries an error object instead.
        FatalModelError: the reply is no chat completion, or its choice holds no answer: a
            tool call, content that is not text, or none written before the length limit or a
            content filter stopped it (each was once read as an empty answer, scored wrong).
    """
    try:
        choice = body["choices"][0]
        message = choice["message"]
        text = _content_text(message.get("content"))
    except (KeyError, IndexError, TypeError, AttributeError):
        raise not_an_answer(body, "an OpenAI chat completion", secrets) from None
    if text:
        return text
    refusal = message.get("refusal")
    if isinstance(refusal, str) and refusal:
        return refusal
    if message.get("tool_calls"):
        raise FatalModelError("reply is a tool call, not an answer")
    reason = choice.get("finish_reason")
    if text == "" and reason not in _CUT_SHORT:
        return text  # the model ended its turn at once: an empty answer, its own
    raise no_answer_text("finish_reason", reason)


def _content_text(content: object) -> str | None:
    """The text of a message's content, None when it holds none (null, a number, no text
    part)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return None
    # Content parts (Mistral's reasoning models): the text parts are the answer, as the
    # Anthropic adapter reads its blocks; thinking parts are not.
    parts = (part for part in content if isinstance(part, dict) and part.get("type") == "text")
    texts = [text for part in parts if isinstance(text := part.get("text"), str)]
    return "".join(texts) if texts else None
