"""Rescoring: re-apply scoring to a run's saved answers, never calling a model. A dry run shows
new scores and a per-question diff; applying stores them with bulk statements."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import select

from benchgen.core.context import Context
from benchgen.core.errors import Conflict
from benchgen.core.permissions import Action
from benchgen.db.tables import Benchmark, Run, RunResult
from benchgen.evals import aggregate
from benchgen.evals.scorers import registry
from benchgen.evals.types import Answer, Scored
from benchgen.services import access, audit, questions, run_execution, scoring


@dataclass(frozen=True)
class Rescore:
    """What rescoring did or would do. `changes` is empty for viewers who may not see
    per-question correctness (they get the counts and aggregates only)."""

    run_id: str
    applied: bool
    scoring: dict[str, Any]
    before: dict[str, Any]
    after: dict[str, Any]
    changed_count: int
    changes: list[dict[str, Any]]


def rescore_run(
    ctx: Context, run_id: str, settings: dict[str, Any] | None = None, apply: bool = False
) -> Rescore:
    """Rescore saved answers with the run's settings, or with `settings` (owner/collaborators).

    Raises:
        NotFound: the run is not visible.
        PermissionDenied: other settings from someone outside the benchmark's team.
        InvalidInput: bad settings.
        Conflict: the run has not finished, or the settings need a model (AI judge).
    """
    run = access.require_run(ctx, run_id, Action.RUN_RESCORE)
    benchmark = ctx.session.get(Benchmark, run.benchmark_id)
    assert benchmark is not None  # require_run found it
    if settings is not None:
        access.require(ctx, Action.RUN_RESCORE_SETTINGS, benchmark, run)
    chosen = scoring.validated(benchmark.format, settings) if settings else dict(run.scoring)
    if run.status not in ("completed", "cancelled"):
        raise Conflict(f"Only finished runs can be rescored; this one is {run.status}.")
    if chosen.get("method") == "judge":
        raise Conflict("Rescoring with the AI judge would call a model; rescoring never does.")
    stored = questions.load_canonical(ctx, run.benchmark_id)
    keys = [scoring.key_for(question) for question in stored]
    tags = [question.tags for question in stored]
    changes, verdicts, positions = _rescore_rows(ctx, run.id, keys, chosen)
    before = dict(run.summary)
    after = aggregate.summarize(verdicts, [tags[p] for p in positions])
    if apply:
        by_position = dict(zip(positions, verdicts, strict=True))
        changed = {change["position"]: by_position[change["position"]] for change in changes}
        _apply(ctx, run, chosen, changed, after)
    detail = access.can(ctx, Action.RUN_READ_DETAIL, benchmark, run)
    return Rescore(
        run.id,
        apply,
        chosen,
        scoring.visible_summary(before, detail),
        scoring.visible_summary(after, detail),
        len(changes),
        changes if detail else [],
    )


def _rescore_rows(
    ctx: Context, run_id: str, keys: list[Any], settings: dict[str, Any]
) -> tuple[list[dict[str, Any]], list[Scored], list[int]]:
    rows = ctx.session.execute(
        select(
            RunResult.position,
            RunResult.raw,
            RunResult.error,
            RunResult.letter_logprobs,
            RunResult.outcome,
            RunResult.score,
            RunResult.extracted,
        )
        .where(RunResult.run_id == run_id)
        .order_by(RunResult.position)
    ).all()
    changes, verdicts, positions = [], [], []
    for position, raw, error, logprobs, outcome, score, extracted in rows:
        answer = Answer(position, "", raw, error, 0, 0, 0, 1, logprobs)
        verdict = registry.score(answer, keys[position], settings)
        verdicts.append(verdict)
        positions.append(position)
        if (verdict.outcome, verdict.score, verdict.extracted) != (outcome, score, extracted):
            changes.append(
                {
                    "position": position,
                    "before": {"outcome": outcome, "score": score, "extracted": extracted},
                    "after": {
                        "outcome": verdict.outcome,
                        "score": verdict.score,
                        "extracted": verdict.extracted,
                    },
                }
            )
    return changes, verdicts, positions


def _apply(
    ctx: Context,
    run: Run,
    settings: dict[str, Any],
    verdicts: dict[int, Scored],
    summary: dict[str, Any],
) -> None:
    run_execution.update_verdicts(ctx, run.id, verdicts)
    run.scoring = settings
    run_execution.set_summary(run, summary)
    audit.record(ctx, "run.rescore", "run", run.id, scoring=settings, changed=len(verdicts))
