"""Scoring settings of a benchmark, and what of a run's scores each viewer may see."""

from __future__ import annotations

from typing import Any

from benchgen.core.context import Context
from benchgen.core.errors import Conflict, invalid
from benchgen.core.permissions import Action
from benchgen.db.tables import Benchmark
from benchgen.evals.scorers import registry
from benchgen.evals.types import Key
from benchgen.services import access, audit
from benchgen.services.benchmarks import questions


def settings_for(benchmark: Benchmark) -> dict[str, Any]:
    """The benchmark's scoring settings, or the format's default."""
    if benchmark.scoring:
        return dict(benchmark.scoring)
    return registry.validate_scoring(benchmark.format, {})


def validated(fmt: str, settings: dict[str, Any]) -> dict[str, Any]:
    """Normalised settings for a `fmt` benchmark.

    Raises:
        InvalidInput: unknown method, a method that does not fit the format, or bad options.
    """
    try:
        return registry.validate_scoring(fmt, settings)
    except ValueError as exc:
        # The registry's message leads with the setting at fault ("options.case: …"): placed
        # there, every door shows it at its field without reading the message.
        field, _, said = str(exc).partition(": ")
        place = field.split(".") if said and field != "scoring" else []
        raise invalid(["scoring", *place], said or str(exc)) from None


def get_scoring(ctx: Context, benchmark_id: str) -> dict[str, Any]:
    """How the benchmark's future runs are scored (its settings with every option filled in).

    Raises:
        NotFound: not visible to the principal.
        Conflict: a custom benchmark, which its bundle's programs score.
    """
    benchmark = access.require_benchmark(ctx, benchmark_id, Action.BENCHMARK_READ)
    _require_questions_format(benchmark)
    return validated(benchmark.format, settings_for(benchmark))


def method_choices(fmt: str) -> dict[str, dict[str, Any]]:
    """The methods a format offers without a model and their options' defaults (for forms)."""
    return {
        name: {option: spec.default for option, spec in method.options.items()}
        for name, method in registry.SCORERS.items()
        if fmt in method.formats and method.scorer is not None
    }


def _require_questions_format(benchmark: Benchmark) -> None:
    if benchmark.format not in registry.DEFAULT_METHOD:
        raise Conflict(
            "A custom benchmark is scored by its bundle's programs; change them with a new "
            "bundle version."
        )


def set_scoring(ctx: Context, benchmark_id: str, settings: dict[str, Any]) -> dict[str, Any]:
    """Change how future runs are scored (past runs keep theirs until rescored and applied).

    Raises:
        NotFound / PermissionDenied: as for editing the benchmark.
        Conflict: a custom benchmark.
        InvalidInput: bad settings.
    """
    benchmark = access.require_benchmark(ctx, benchmark_id, Action.BENCHMARK_EDIT)
    _require_questions_format(benchmark)
    checked = validated(benchmark.format, settings)
    benchmark.scoring, benchmark.updated_at = checked, ctx.now()
    audit.record(
        ctx, audit.AuditAction.BENCHMARK_SCORING, "benchmark", benchmark.id, scoring=checked
    )
    return checked


def key_for(question: questions.Canonical) -> Key:
    """The answer key of one stored question, as scorers take it."""
    return Key(question.answers, question.choices)


# Shown only to those who may see per-question results: a tag held by a single question would
# reveal whether it was right, and the figures over every sample (pass@k, majority) let an
# endpoint that answers differently from sample to sample test many answer-key guesses in one
# run, where the run quota counts on about one per run (docs/permissions.md). So does the mean
# of partial credits (token F1): an endpoint that pads each guess with its own number of words
# makes each right guess add its own power of two to the sum, one run telling every verdict.
_DETAIL_ONLY = frozenset({"per_tag", "sampling", "mean_score"})


def visible_summary(summary: dict[str, Any], detail: bool) -> dict[str, Any]:
    """Aggregates for everyone; per-tag and per-sample figures and the mean partial credit
    only for those who may see per-question results."""
    if detail:
        return dict(summary)
    return {name: value for name, value in summary.items() if name not in _DETAIL_ONLY}
