"""Model adapters and the explicit registry that builds one from a ModelSpec."""

from __future__ import annotations

from collections.abc import Callable

from benchgen.evals.adapters.anthropic import AnthropicAdapter
from benchgen.evals.adapters.builtin import BuiltinAdapter
from benchgen.evals.adapters.local_gguf import LocalGGUFAdapter
from benchgen.evals.adapters.local_hf import LocalHFAdapter
from benchgen.evals.adapters.openai_compat import OpenAICompatAdapter
from benchgen.evals.types import Adapter, FatalModelError, ModelSpec

ADAPTERS: dict[str, Callable[[ModelSpec], Adapter]] = {
    "openai_compat": OpenAICompatAdapter,
    "anthropic": AnthropicAdapter,
    "local_gguf": LocalGGUFAdapter,
    "local_hf": LocalHFAdapter,
    "builtin": BuiltinAdapter,
}


def build_adapter(spec: ModelSpec) -> Adapter:
    """Build the adapter for `spec.kind`.

    The caller checks a user-supplied `base_url` with `netguard.check_endpoint` first, and
    passes the same allow-list in `spec.host_allowlist`: the hosted-model adapters check every
    connection's address again with it (DNS may answer differently by then).

    Raises:
        FatalModelError: an unknown kind, or the adapter refuses the spec (missing URL or key,
            unknown built-in name, missing GGUF file or xllamacpp).
    """
    factory = ADAPTERS.get(spec.kind)
    if factory is None:
        raise FatalModelError(f"unknown model kind {spec.kind!r} (known: {', '.join(ADAPTERS)})")
    return factory(spec)
