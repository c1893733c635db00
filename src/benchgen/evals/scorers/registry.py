"""The scoring methods by name: which formats each serves, its options, and one entry point."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from benchgen.evals.scorers import f1, numeric, regex
from benchgen.evals.scorers.choice import choice_scorer, score_choice, score_choice_logprob
from benchgen.evals.scorers.exact import exact_scorer, score_exact
from benchgen.evals.scorers.includes import score_includes
from benchgen.evals.scorers.normalize import DEFAULT_STEPS, STEP_NAMES
from benchgen.evals.scorers.verdict import Prepared
from benchgen.evals.types import Answer, Key, Scored

ReplyScorer = Callable[[str | None, Key, Mapping[str, Any]], Scored]
AnswerScorer = Callable[[Answer, Key, Mapping[str, Any]], Scored]
# (reply, engine error, letter log-probs, accepted answers, choices): a stored answer and its
# question's key, as stored.
StoredScorer = Callable[
    [str | None, str | None, dict[str, float] | None, Sequence[str], Sequence[str] | None], Scored
]

QA, MCQ = "qa", "mcq"
CUSTOM = "custom"  # a bundle's own programs score it; no scorer here
JUDGE = "judge"
DEFAULT_METHOD = {QA: "exact", MCQ: "choice"}


@dataclass(frozen=True)
class Option:
    """One option of a method: its default (whose type, bool or float, it must have) and range."""

    default: bool | float
    low: float | None = None
    high: float | None = None


@dataclass(frozen=True)
class Method:
    """One scoring method: the formats it serves, its options and its scorer.

    `scorer` is None for the AI judge, which is asynchronous and needs a model (see judge.py).
    """

    formats: frozenset[str]
    scorer: AnswerScorer | None
    options: Mapping[str, Option] = field(default_factory=dict)
    # When the scorer reads only the reply: the same scorer with its options read once.
    prepare: Callable[[Mapping[str, Any]], Prepared] | None = None


def _on_reply(
    formats: frozenset[str],
    scorer: ReplyScorer,
    options: Mapping[str, Option] | None = None,
    prepare: Callable[[Mapping[str, Any]], Prepared] | None = None,
) -> Method:
    """A method whose scorer reads only the reply text, adapted to the registry's signature;
    `prepare` binds its options once (by default, they are passed along on every call)."""

    def score_answer(answer: Answer, key: Key, options: Mapping[str, Any]) -> Scored:
        return scorer(answer.raw, key, options)

    def bind(options: Mapping[str, Any]) -> Prepared:
        def score(raw: str | None, answers: Sequence[str], choices: Sequence[str] | None) -> Scored:
            return scorer(raw, key_of(answers, choices), options)

        return score

    return Method(formats, score_answer, options or {}, prepare or bind)


_QA_ONLY, _MCQ_ONLY = frozenset({QA}), frozenset({MCQ})
# The normalisation steps exact and includes apply before comparing, each switchable.
_STEPS = {name: Option(getattr(DEFAULT_STEPS, name)) for name in STEP_NAMES}

SCORERS: dict[str, Method] = {
    "exact": _on_reply(_QA_ONLY, score_exact, _STEPS, exact_scorer),
    "includes": _on_reply(_QA_ONLY, score_includes, _STEPS),
    "numeric": _on_reply(
        _QA_ONLY,
        numeric.score_numeric,
        {
            "tolerance": Option(numeric.DEFAULT_TOLERANCE, low=0.0),
            "rel_tolerance": Option(numeric.DEFAULT_REL_TOLERANCE, low=0.0, high=1.0),
        },
    ),
    "regex": _on_reply(
        _QA_ONLY,
        regex.score_regex,
        {"case_insensitive": Option(regex.DEFAULT_CASE_INSENSITIVE)},
    ),
    "f1": _on_reply(
        _QA_ONLY,
        f1.score_f1,
        {"threshold": Option(f1.DEFAULT_THRESHOLD, low=0.0, high=1.0)},
    ),
    "choice": _on_reply(_MCQ_ONLY, score_choice, prepare=choice_scorer),
    "choice_logprob": Method(_MCQ_ONLY, score_choice_logprob),
    JUDGE: Method(_QA_ONLY, None),
}


def validate_scoring(fmt: str, settings: Mapping[str, Any]) -> dict[str, Any]:
    """Check scoring settings for a question format and fill in defaults.

    Args:
        fmt: the question format, "qa" or "mcq".
        settings: `{"method": ..., "options": {...}}`; both may be left out.

    Returns:
        `{"method": name, "options": {every option of the method, defaults filled in}}`.

    Raises:
        ValueError: the message names the bad field (format, method, options.<name>).
    """
    if fmt not in DEFAULT_METHOD:
        raise ValueError(f"format: expected one of {sorted(DEFAULT_METHOD)}, got {fmt!r}")
    if not isinstance(settings, Mapping):
        raise ValueError("scoring: expected an object with 'method' and 'options'")
    unknown = sorted(str(name) for name in settings if name not in ("method", "options"))
    if unknown:
        raise ValueError(f"scoring: unknown field(s) {unknown}; expected 'method', 'options'")
    name = settings.get("method")
    if name is None:
        name = DEFAULT_METHOD[fmt]
    method = _method_for(fmt, name)
    options = settings.get("options")
    if options is None:
        options = {}
    if not isinstance(options, Mapping):
        raise ValueError("options: expected an object")
    return {"method": name, "options": _check_options(name, method, options)}


def score(answer: Answer, key: Key, settings: Mapping[str, Any]) -> Scored:
    """Score one answer with settings returned by `validate_scoring`.

    An answer that carries an engine error scores "error" with that error as the reasoning,
    whatever the method.

    Raises:
        ValueError: an unknown method, or the judge (call `judge.judge_answer` instead).
    """
    if answer.error is not None:
        return Scored("error", 0.0, None, answer.error)
    scorer, _ = _scorers(settings)
    return scorer(answer, key, settings.get("options") or {})


def stored_scorer(settings: Mapping[str, Any]) -> StoredScorer:
    """`score` for many stored answers: the method is looked up and its options read once, and
    a method that reads only the reply is called without building an Answer or a Key. Takes
    (raw, error, letter log-probs, accepted answers, choices), all a stored answer and its
    question keep for scoring, and gives what `score` gives for it.

    Raises:
        ValueError: an unknown method, or the judge (call `judge.judge_answer` instead), even
            before any answer (`score` lets an errored answer through first).
    """
    whole, prepare = _scorers(settings)
    options = settings.get("options") or {}
    reply = None if prepare is None else prepare(options)

    def score_stored(
        raw: str | None,
        error: str | None,
        letters: dict[str, float] | None,
        answers: Sequence[str],
        choices: Sequence[str] | None,
    ) -> Scored:
        if error is not None:
            return Scored("error", 0.0, None, error)
        if reply is not None:
            return reply(raw, answers, choices)
        answer = Answer(0, "", raw, None, 0, 0, 0, 1, letters)
        return whole(answer, key_of(answers, choices), options)

    return score_stored


def key_of(answers: Sequence[str], choices: Sequence[str] | None) -> Key:
    """A question's key from its accepted answers and choices as stored (lists in JSON)."""
    return Key(tuple(answers), None if choices is None else tuple(choices))


def _scorers(
    settings: Mapping[str, Any],
) -> tuple[AnswerScorer, Callable[[Mapping[str, Any]], Prepared] | None]:
    method = SCORERS.get(settings.get("method", ""))
    if method is None:
        raise ValueError(f"method: unknown scoring method {settings.get('method')!r}")
    if method.scorer is None:
        raise ValueError("method: the AI judge is asynchronous; call judge.judge_answer")
    return method.scorer, method.prepare


def _method_for(fmt: str, name: object) -> Method:
    method = SCORERS.get(name) if isinstance(name, str) else None
    if method is None:
        raise ValueError(f"method: unknown scoring method {name!r}; choose from {sorted(SCORERS)}")
    if fmt not in method.formats:
        valid = sorted(n for n, m in SCORERS.items() if fmt in m.formats)
        raise ValueError(f"method: {name!r} does not apply to {fmt} questions; use one of {valid}")
    return method


def _check_options(name: str, method: Method, given: Mapping[str, Any]) -> dict[str, Any]:
    unknown = sorted(str(option) for option in given if option not in method.options)
    if unknown:
        allowed = sorted(method.options) or "none"
        raise ValueError(f"options: {unknown} not known for {name!r} (allowed: {allowed})")
    return {
        option: _check_value(f"options.{option}", spec, given.get(option, spec.default))
        for option, spec in method.options.items()
    }


def _check_value(path: str, spec: Option, value: Any) -> bool | float:
    if isinstance(spec.default, bool):
        if not isinstance(value, bool):
            raise ValueError(f"{path}: expected true or false, got {value!r}")
        return value
    # bool is an int in Python, but `true` as a tolerance is a mistake worth reporting.
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"{path}: expected a finite number, got {value!r}")
    if spec.low is not None and value < spec.low:
        raise ValueError(f"{path}: must be at least {spec.low}, got {value!r}")
    if spec.high is not None and value > spec.high:
        raise ValueError(f"{path}: must be at most {spec.high}, got {value!r}")
    return float(value)
