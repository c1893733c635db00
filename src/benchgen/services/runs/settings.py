"""A run's generation settings and options: their ranges and defaults, which providers take
which setting, the subset of questions asked, and the text that shows them to people."""

from __future__ import annotations

import json
import random
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator
from pydantic_core import PydanticCustomError

from benchgen.core.errors import invalid
from benchgen.core.text import line_problem, text_problem
from benchgen.evals.prompts import CHAIN_OF_THOUGHT, PROMPT_VERSION
from benchgen.services.specs import finite_number, not_bool

# Questions an owner marks with this tag are public worked examples: anyone running the
# benchmark may have them shown as few-shot examples (their answers are then no secret).
EXAMPLE_TAG = "example"
MAX_SEED = 2**31 - 1
_Strict = ConfigDict(extra="forbid")
_PLAIN_TAG = re.compile(r"[\w.\-/:+#]+")  # shown as it is; any other tag is quoted
# What each provider's API takes (the adapters send these and nothing else). The Messages API
# has no seed; the built-in baselines ignore sampling, and only `random` reads a seed.
_HOSTED = frozenset({"temperature", "top_p", "max_tokens", "stop", "seed"})
SUPPORTED: dict[str, frozenset[str]] = {
    "openai_compat": _HOSTED,
    "anthropic": _HOSTED - {"seed"},
    "local_gguf": _HOSTED,
    "local_hf": _HOSTED,
    "builtin": frozenset({"seed"}),
}
ANTHROPIC_MAX_TEMPERATURE = 1.0


class RunSettings(BaseModel):
    """How the model is asked: sampling, prompt additions and samples per question. None (or
    empty) leaves the model's own default: greedy decoding, its `max_tokens`, no stop."""

    model_config = _Strict

    temperature: float | None = Field(None, ge=0, le=2)
    top_p: float | None = Field(None, gt=0, le=1)
    max_tokens: int | None = Field(None, ge=1, le=32768)
    stop: list[str] = Field(default_factory=list, max_length=4)
    system_prompt: str = Field("", max_length=4000)
    few_shot: int = Field(0, ge=0, le=10, description="worked examples shown before each question")
    chain_of_thought: Literal["step_by_step"] | None = None
    seed: int | None = Field(None, ge=0, le=MAX_SEED)
    samples: int = Field(1, ge=1, le=20, description="answers asked per question")

    _whole = field_validator("max_tokens", "few_shot", "seed", "samples", mode="before")(not_bool)
    # NaN, which a JSON body may carry as Python reads it, failed the bound as if a number.
    _real = field_validator("temperature", "top_p", mode="before")(finite_number)

    @field_validator("stop")
    @classmethod
    def _stops(cls, stops: list[str]) -> list[str]:
        for stop in stops:
            if not 1 <= len(stop) <= 100:
                raise ValueError("each stop sequence must be 1 to 100 characters")
            problem = text_problem(stop)
            if problem:
                raise ValueError(problem)
        return stops

    @field_validator("system_prompt")
    @classmethod
    def _system(cls, text: str) -> str:
        problem = text_problem(text) if text else None
        if problem:
            raise ValueError(problem)
        return text.strip()


# The fields each kind of subset reads besides its kind.
_TAKES = {"first": ("n",), "random": ("n", "seed"), "tags": ("tags",)}


class Subset(BaseModel):
    """Part of the benchmark: its first `n` questions, `n` drawn at random with `seed`, or the
    questions holding any of `tags`. A subset run is partial: never on a leaderboard."""

    model_config = _Strict

    kind: Literal["first", "random", "tags"]
    n: int | None = Field(None, ge=1, le=1_000_000)
    seed: int = Field(0, ge=0, le=MAX_SEED)
    tags: list[str] = Field(default_factory=list, max_length=20)

    _whole = field_validator("n", "seed", mode="before")(not_bool)

    @field_validator("n", "seed", "tags")
    @classmethod
    def _of_its_kind(cls, value: Any, info: ValidationInfo) -> Any:
        # A field of another kind was dropped: {"kind": "first", "n": 5, "tags": ["hard"]}
        # ran the first 5 questions, hard or not. Its default (what a form or a dump of a
        # subset sends for fields it does not use) asks nothing and passes.
        kind, field = info.data.get("kind"), info.field_name
        if kind is not None and field not in _TAKES[kind] and value not in (None, 0, []):
            raise PydanticCustomError(
                "subset_field",
                f"a {kind!r} subset takes no {field}: choose the first n, n at random with a "
                "seed, or the questions with these tags",
            )
        return value

    @model_validator(mode="after")
    def _complete(self) -> Subset:
        if self.kind in ("first", "random") and self.n is None:
            raise ValueError(f"a {self.kind!r} subset needs n")
        if self.kind == "tags" and not self.tags:
            raise ValueError("a 'tags' subset needs at least one tag")
        for tag in self.tags:
            if not 1 <= len(tag) <= 100 or line_problem(tag):
                raise ValueError("each tag must be 1 to 100 plain characters")
        return self


class RunOptions(BaseModel):
    """Everything optional about a run beyond the model and benchmark."""

    model_config = _Strict

    settings: RunSettings = Field(default_factory=RunSettings)
    subset: Subset | None = None
    cache: bool = Field(False, description="reuse your own cached replies to identical asks")
    max_credits: int | None = Field(None, ge=0, description="refuse to start above this")

    _whole = field_validator("max_credits", mode="before")(not_bool)


def check_supported(settings: RunSettings, kind: str, name: str, fmt: str, method: str) -> None:
    """Refuse settings the model's provider or the benchmark's scoring cannot honour.

    Raises:
        InvalidInput: at `settings.<field>`, saying which provider or method refuses it.
    """
    if fmt == "custom" and settings != RunSettings():
        raise invalid(["settings"], "a custom benchmark's own programs ask the model: no settings")
    for field in sorted(_HOSTED - SUPPORTED.get(kind, _HOSTED)):
        if getattr(settings, field) not in (None, []):
            raise invalid(["settings", field], f"{_provider(kind)} do not take {field}")
    if kind == "builtin" and settings.seed is not None and name != "random":
        raise invalid(["settings", "seed"], "only the random baseline reads a seed")
    if kind == "anthropic" and (settings.temperature or 0) > ANTHROPIC_MAX_TEMPERATURE:
        raise invalid(["settings", "temperature"], "Anthropic models take 0 to 1")
    if settings.samples > 1 and method in ("judge", "choice_logprob"):
        raise invalid(
            ["settings", "samples"], f"the {method!r} scoring method takes one sample per question"
        )
    if settings.chain_of_thought and method == "choice_logprob":
        raise invalid(["settings", "chain_of_thought"], "letter log-prob scoring reads one token")


def _provider(kind: str) -> str:
    names = {"anthropic": "Anthropic models", "builtin": "the built-in baselines"}
    return names.get(kind, f"{kind} models")


def provider_params(settings: RunSettings) -> dict[str, Any]:
    """The settings the adapters read from a model's params (unset ones left out)."""
    params: dict[str, Any] = {
        "temperature": settings.temperature,
        "top_p": settings.top_p,
        "max_tokens": settings.max_tokens,
        "seed": settings.seed,
        "stop": settings.stop or None,
        "system_prompt": settings.system_prompt or None,
    }
    return {name: value for name, value in params.items() if value is not None}


def extra_prompt_chars(settings: RunSettings, example_chars: int) -> int:
    """Characters each question's prompt gains from the settings (for the estimate)."""
    cot = len(CHAIN_OF_THOUGHT[settings.chain_of_thought]) if settings.chain_of_thought else 0
    return len(settings.system_prompt) + example_chars + cot


def choose_positions(subset: Subset | None, tags: list[tuple[str, ...]]) -> list[int] | None:
    """The positions a subset asks, in order (None: the whole benchmark). `tags` holds each
    question's tags by position."""
    if subset is None:
        return None
    count = len(tags)
    if subset.kind == "first":
        return list(range(min(subset.n or 0, count)))
    if subset.kind == "random":
        # Seeded by the run's own seed: the same subset again is the same questions again.
        rng = random.Random(subset.seed)  # noqa: S311 - a reproducible sample, not a secret
        return sorted(rng.sample(range(count), min(subset.n or 0, count)))
    wanted = set(subset.tags)
    return [position for position, held in enumerate(tags) if wanted & set(held)]


def recorded(options: RunOptions, few_shot_positions: list[int], partial: bool) -> dict[str, Any]:
    """What the run keeps of its options (and what leaderboards show)."""
    return {
        **options.settings.model_dump(),
        "prompt_version": PROMPT_VERSION,
        "subset": options.subset.model_dump() if options.subset else None,
        "few_shot_positions": few_shot_positions,
        "cache": options.cache,
        "partial": partial,
    }


def describe(settings: dict[str, Any], whole: bool = False) -> str:
    """The settings that differ from the defaults, in a line ("" when none do): short, or with
    `whole` the stop sequences and system prompt word for word (JSON-quoted, so a newline or a
    space shows), as a preview that is approved must show them."""
    parts = [
        f"{name.replace('_', ' ')} {settings[name]}"
        for name in ("temperature", "top_p", "max_tokens", "seed")
        if settings.get(name) is not None
    ]
    stop, system_prompt = settings.get("stop"), settings.get("system_prompt")
    if stop:
        quoted = ", ".join(_quoted(sequence) for sequence in stop)
        parts.append(f"stop sequences {quoted}" if whole else f"{len(stop)} stop sequence(s)")
    if system_prompt:
        parts.append(
            f"system prompt {_quoted(system_prompt)}"
            if whole
            else f"a system prompt of {len(system_prompt)} characters"
        )
    if settings.get("few_shot"):
        parts.append(f"{settings['few_shot']}-shot")
    if settings.get("chain_of_thought"):
        parts.append(f"chain of thought {settings['chain_of_thought']}")
    if settings.get("samples", 1) > 1:
        parts.append(f"{settings['samples']} samples per question")
    subset = settings.get("subset")
    if subset:
        parts.append(_subset_text(subset))
    if settings.get("cache"):
        parts.append("response cache on")
    return ", ".join(parts)


def _quoted(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _subset_text(subset: dict[str, Any]) -> str:
    if subset["kind"] == "first":
        return f"subset: the first {subset['n']} questions"
    if subset["kind"] == "random":
        return f"subset: {subset['n']} random questions (seed {subset['seed']})"
    return "subset: questions tagged " + ", ".join(map(_tag_text, subset["tags"]))


def _tag_text(tag: str) -> str:
    # A tag holding a comma, a quote or spaces is quoted: ["a, b"] read as the two tags a and b.
    return tag if _PLAIN_TAG.fullmatch(tag) else _quoted(tag)
