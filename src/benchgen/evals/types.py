"""Plain values that flow through the evaluation engine (no users, no database, no HTTP)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple, Protocol

Outcome = Literal["correct", "wrong", "no_answer", "error"]


@dataclass(frozen=True)
class Item:
    """One question as a model sees it: never the answer key."""

    index: int
    prompt: str
    choices: tuple[str, ...] | None = None
    sample: int = 0  # which of a question's samples this asking is (0 unless sampling)


@dataclass(frozen=True)
class Key:
    """What a scorer compares against: accepted answers (qa) or the correct label (mcq)."""

    answers: tuple[str, ...]
    choices: tuple[str, ...] | None = None


# The param of a local model's spec (GGUF or Hugging Face weights) that sets its CPU threads; the
# services fill it from the `local_model_threads` setting, and a spec without it gets the default.
THREADS_PARAM = "threads"
_DEFAULT_LOCAL_THREADS = 2


@dataclass(frozen=True)
class ModelSpec:
    """How to call one model. `kind` picks the adapter; `api_key` is decrypted only for the call."""

    kind: str  # openai_compat | anthropic | local_gguf | builtin
    name: str
    base_url: str | None = None
    api_key: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    # The operator's endpoint allow-list (netguard's entries): the adapters check each
    # connection's address against it, since a name may resolve elsewhere after registration.
    host_allowlist: frozenset[str] = frozenset()


def local_threads(spec: ModelSpec) -> int:
    """The CPU threads a local model's spec asks for (`THREADS_PARAM`, else the default)."""
    return int(spec.params.get(THREADS_PARAM, _DEFAULT_LOCAL_THREADS))


@dataclass(frozen=True)
class Completion:
    """A model's reply to one prompt."""

    text: str
    input_tokens: int = 0
    output_tokens: int = 0
    letter_logprobs: dict[str, float] | None = None  # only where the adapter offers them

    def __post_init__(self) -> None:
        # A model whose weights or precision broke gives NaN: the first letter won by chance,
        # and PostgreSQL's JSON refuses NaN, which failed the run's batch at every retry.
        if self.letter_logprobs and any(map(math.isnan, self.letter_logprobs.values())):
            raise FatalModelError(
                "the model's log-probs are not numbers (NaN): its weights or precision are broken"
            )


class RetryableError(Exception):
    """Worth another try later: rate limited (429), server error (5xx), timeout, dropped link."""

    def __init__(self, message: str, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class RateLimitedError(RetryableError):
    """The endpoint said 429: retry later, and send fewer requests at once meanwhile."""


class FatalModelError(Exception):
    """Retrying cannot help: bad key, unknown model, malformed request, refused address."""


class Adapter(Protocol):
    """Calls one model. Implementations must be safe to call concurrently from one event loop."""

    @property
    def max_in_flight(self) -> int | None:
        """The most calls this adapter really runs at once, or None where only the caller limits
        them. The engine takes no more questions than this in hand: a call queued inside the
        adapter would be out of reach of cancellation and count its wait as request time."""
        ...

    async def complete(self, item: Item, prompt: str) -> Completion: ...

    async def aclose(self) -> None: ...


@dataclass(frozen=True)
class Answer:
    """The engine's record of one question: a completion or an error, never both, never neither."""

    index: int
    prompt_sent: str
    raw: str | None
    error: str | None
    input_tokens: int
    output_tokens: int
    latency_ms: int
    attempts: int  # 0 for a reply reused from a response cache (no call made)
    letter_logprobs: dict[str, float] | None = None
    sample: int = 0


# A named tuple, not a frozen dataclass: one is made for every answer scored (rescoring makes
# millions), and a tuple is built in under half the time, as immutable.
class Scored(NamedTuple):
    """A scorer's verdict on one answer."""

    outcome: Outcome
    score: float
    extracted: str | None
    reasoning: str | None = None
