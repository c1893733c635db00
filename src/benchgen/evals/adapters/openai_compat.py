"""Any OpenAI-compatible chat endpoint (OpenAI, vLLM, Ollama, llama.cpp server…) over httpx."""

from __future__ import annotations

from typing import Any

from benchgen.evals.adapters.transport import make_client, post_json, token_count
from benchgen.evals.types import Completion, FatalModelError, Item, ModelSpec

DEFAULT_MAX_TOKENS = 1024


class OpenAICompatAdapter:
    """Calls `{base_url}/chat/completions` with one user message and greedy decoding.

    Params read from `spec.params`: `timeout_s` (60), `max_tokens` (1024) and `concurrency`
    (16, the connection pool size: set it to the engine's concurrency).
    """

    def __init__(self, spec: ModelSpec) -> None:
        if not spec.base_url:
            raise FatalModelError("an OpenAI-compatible model needs a base_url")
        self._url = spec.base_url.rstrip("/") + "/chat/completions"
        self._model = spec.name
        self._max_tokens = int(spec.params.get("max_tokens", DEFAULT_MAX_TOKENS))
        self._secrets = (spec.api_key,) if spec.api_key else ()
        headers = {"Authorization": f"Bearer {spec.api_key}"} if spec.api_key else {}
        self._client = make_client(
            float(spec.params.get("timeout_s", 60)),
            int(spec.params.get("concurrency", 16)),
            headers,
        )

    async def complete(self, item: Item, prompt: str) -> Completion:
        """Send the prompt; see `transport.post_json` for how failures are classified."""
        payload = {
            "model": self._model,
            "messages": [{"role": "user", "content": prompt}],
            "max_tokens": self._max_tokens,
            "temperature": 0,
        }
        body = await post_json(self._client, self._url, payload, self._secrets)
        usage = body.get("usage")
        return Completion(
            text=_message_text(body),
            input_tokens=token_count(usage, "prompt_tokens"),
            output_tokens=token_count(usage, "completion_tokens"),
        )

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._client.aclose()


def _message_text(body: dict[str, Any]) -> str:
    try:
        content = body["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        raise FatalModelError("reply is not an OpenAI chat completion") from None
    # A refusal or a tool-only reply has null content: that is an empty answer, not a failure.
    return content if isinstance(content, str) else ""
