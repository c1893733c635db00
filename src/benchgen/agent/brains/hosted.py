"""Hosted brains through pydantic-ai's providers: OpenAI (or a compatible server), Anthropic."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from benchgen.core.config import Settings
from benchgen.core.errors import invalid

if TYPE_CHECKING:
    from pydantic_ai.models import Model

KEY_VARIABLES = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}


def hosted_model(kind: str, name: str, settings: Settings) -> Model:
    """A provider model; the key comes from `BENCHGEN_AGENT_API_KEY` or the provider's own
    environment variable (OPENAI_API_KEY, ANTHROPIC_API_KEY)."""
    # Each provider's SDK is imported for its own kind only: a server with an OpenAI-compatible
    # brain need not wait the 1.7 s Anthropic's takes to import (OpenAI's takes 0.65 s).
    key = settings.agent_api_key.get_secret_value() if settings.agent_api_key else None
    own = KEY_VARIABLES[kind]
    if key is None and not os.environ.get(own) and not settings.agent_base_url:
        # Said here: the SDK's own message tells a programmer to pass `api_key=` in code.
        raise invalid(["agent_api_key"], f"needs an API key: set BENCHGEN_AGENT_API_KEY or {own}")
    if kind == "anthropic":
        from pydantic_ai.models.anthropic import AnthropicModel
        from pydantic_ai.providers.anthropic import AnthropicProvider

        return AnthropicModel(name, provider=AnthropicProvider(api_key=key))
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    # A local OpenAI-compatible server often needs no key; the SDK insists on one all the same.
    if settings.agent_base_url and key is None:
        key = "unused"
    provider = OpenAIProvider(base_url=settings.agent_base_url, api_key=key)
    return OpenAIChatModel(name, provider=provider)
