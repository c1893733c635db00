"""The agent's brains, chosen by `BENCHGEN_AGENT_MODEL`; none changes what the agent may do."""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic_ai.exceptions import UserError
from pydantic_ai.models import Model

from benchgen.core.config import Settings
from benchgen.core.errors import BenchGenError, invalid
from benchgen.evals.types import FatalModelError


class BrainUnavailable(RuntimeError):
    """The configured brain cannot be built; the message names the setting to fix."""


# What stands in for the brain's API key wherever a reply, a tool call or a log line held it.
KEY_HIDDEN = "[the agent's API key, hidden]"


@dataclass(frozen=True)
class Brain:
    """A pydantic-ai model, the name the transcript records for it, and the API key it sends
    (`key`), which nobody reading the chat or the logs may see."""

    name: str
    model: Model
    key: str | None = field(default=None, repr=False)

    def hidden(self, text: str) -> str:
        """`text` with the API key taken out: a provider's error may echo the key it was sent
        (a gateway's "Invalid key: …"), and a hostile server may put it in its reply."""
        return text.replace(self.key, KEY_HIDDEN) if self.key else text


def build_brain(settings: Settings) -> Brain:
    """The configured brain: `offline` (default), `local:<gguf path|smollm2>`, `openai:<model>`
    (optionally at `BENCHGEN_AGENT_BASE_URL`) or `anthropic:<model>`.

    Raises:
        InvalidInput: an unknown kind of brain, a name without a model, or a hosted brain
            without an API key.
        FatalModelError: a local brain's GGUF file is missing.
    """
    spec = settings.agent_model.strip()
    kind, _, name = spec.partition(":")
    if spec == "offline":
        from benchgen.agent.brains.offline.planner import offline_model

        return Brain("offline", offline_model(settings))
    if kind == "local" and name:
        from benchgen.agent.brains.local import local_model
        from benchgen.evals.adapters.local_gguf import model_path

        model_path(name)  # a missing file stops the start, not every turn after it
        return Brain(spec, local_model(name, settings.local_model_threads))
    if kind in ("openai", "anthropic") and name:
        from benchgen.agent.brains.hosted import api_key, hosted_model

        return Brain(spec, hosted_model(kind, name, settings), api_key(kind, settings))
    raise invalid(
        ["agent_model"],
        "must be offline, local:<gguf path or smollm2>, openai:<model> or anthropic:<model>",
    )


def configured_brain(settings: Settings) -> Brain:
    """`build_brain` for a server or command starting up, with a message fit to stop it.

    Raises:
        BrainUnavailable: the setting is wrong, or the brain's package or key is missing.
    """
    named = f"BENCHGEN_AGENT_MODEL={settings.agent_model!r}"
    try:
        return build_brain(settings)
    except BenchGenError as exc:
        raise BrainUnavailable(f"{named}: {exc.message}") from None
    except FatalModelError as exc:
        raise BrainUnavailable(f"{named}: {exc}") from None
    except UserError as exc:
        # The provider's own refusal, e.g. no API key in BENCHGEN_AGENT_API_KEY or its variable.
        raise BrainUnavailable(f"{named}: {exc}") from None
    except ImportError as exc:
        # An optional extra (e.g. benchgen[local]) the chosen brain needs is not installed.
        raise BrainUnavailable(f"{named} needs a package that is not installed: {exc}") from None
