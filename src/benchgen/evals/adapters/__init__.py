"""Model adapters and the explicit registry that builds one from a ModelSpec."""

from __future__ import annotations

from importlib import import_module

from benchgen.evals.types import Adapter, FatalModelError, ModelSpec

# Kind → (module under this package, adapter class). A process imports only the adapter of the
# kind it runs: `benchgen run` on a hosted model loads no local model's code, and its first
# request goes out sooner (each module costs milliseconds at every start).
ADAPTERS: dict[str, tuple[str, str]] = {
    "openai_compat": ("openai_compat", "OpenAICompatAdapter"),
    "anthropic": ("anthropic", "AnthropicAdapter"),
    "local_gguf": ("local_gguf", "LocalGGUFAdapter"),
    "local_hf": ("local_hf", "LocalHFAdapter"),
    "builtin": ("builtin", "BuiltinAdapter"),
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
    entry = ADAPTERS.get(spec.kind)
    if entry is None:
        raise FatalModelError(f"unknown model kind {spec.kind!r} (known: {', '.join(ADAPTERS)})")
    module, name = entry
    adapter: Adapter = getattr(import_module(f"{__name__}.{module}"), name)(spec)
    return adapter
