"""Hosted brains through pydantic-ai's providers: OpenAI (or a compatible server), Anthropic."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from benchgen.core.config import Settings
from benchgen.core.errors import invalid

if TYPE_CHECKING:
    from pydantic_ai.models import Model

KEY_VARIABLES = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
# Shorter keys are not hidden from replies: a local server's "test" or "none" would blank out
# ordinary words, and such a key guards nothing worth hiding.
SHORTEST_HIDDEN_KEY = 8


def api_key(kind: str, settings: Settings) -> str | None:
    """The key the brain sends, when it is one worth hiding from replies and logs: from
    `BENCHGEN_AGENT_API_KEY`, else (with no `BENCHGEN_AGENT_BASE_URL`) the provider's variable."""
    key = settings.agent_api_key.get_secret_value() if settings.agent_api_key else None
    if key is None and not settings.agent_base_url:
        key = os.environ.get(KEY_VARIABLES[kind])
    return key if key and len(key) >= SHORTEST_HIDDEN_KEY else None


def hosted_model(kind: str, name: str, settings: Settings) -> Model:
    """A provider model; the key comes from `BENCHGEN_AGENT_API_KEY` or the provider's own
    environment variable (OPENAI_API_KEY, ANTHROPIC_API_KEY). `BENCHGEN_AGENT_BASE_URL` points
    either at another server speaking its API."""
    # Each provider's SDK is imported for its own kind only: a server with an OpenAI-compatible
    # brain need not wait the 1.7 s Anthropic's takes to import (OpenAI's takes 0.65 s).
    key = settings.agent_api_key.get_secret_value() if settings.agent_api_key else None
    own = KEY_VARIABLES[kind]
    base_url = settings.agent_base_url
    if key is None and not os.environ.get(own) and not base_url:
        # Said here: the SDK's own message tells a programmer to pass `api_key=` in code.
        raise invalid(["agent_api_key"], f"needs an API key: set BENCHGEN_AGENT_API_KEY or {own}")
    # A local server often needs no key; the SDKs insist on one all the same. The provider's
    # own key (OPENAI_API_KEY…) is not sent to a server the operator named instead of it.
    if base_url and key is None:
        key = "unused"
    if kind == "anthropic":
        from pydantic_ai.models.anthropic import AnthropicModel
        from pydantic_ai.providers.anthropic import AnthropicProvider

        return AnthropicModel(name, provider=AnthropicProvider(api_key=key, base_url=base_url))
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    return OpenAIChatModel(name, provider=OpenAIProvider(base_url=base_url, api_key=key))
