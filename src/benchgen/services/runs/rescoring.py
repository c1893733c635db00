"""Rescoring: re-apply scoring to a run's saved answers, never calling a model. A dry run shows
new scores and a per-question diff; applying stores them with bulk statements."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from sqlalchemy import null, select

from benchgen.core.context import Context
from benchgen.core.errors import Conflict
from benchgen.core.permissions import Action
from benchgen.core.statuses import RunStatus
from benchgen.db.tables import Benchmark, Run, RunResult
from benchgen.evals import aggregate
from benchgen.evals.scorers import registry
from benchgen.evals.types import Answer, Key, Scored
from benchgen.services import access, audit
from benchgen.services.benchmarks import questions, scoring
from benchgen.services.runs import execution
from benchgen.services.runs.execution import LOGPROB

# A diff of a million answers helps nobody and costs memory: show the first ones and the count.
MAX_CHANGES_SHOWN = 1000


@dataclass(frozen=True)
class Rescore:
    """What rescoring did or would do. `changes` lists the first MAX_CHANGES_SHOWN changed
    answers; it is empty for viewers who may not see per-question correctness (they get the
    count and aggregates only)."""

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
    if run.status not in (RunStatus.COMPLETED, RunStatus.CANCELLED):
        raise Conflict(f"Only finished runs can be rescored; this one is {run.status}.")
    if chosen.get("method") == "judge":
        raise Conflict("Rescoring with the AI judge would call a model; rescoring never does.")
    keys, tags = questions.load_keys(ctx, run.benchmark_id)
    with _collector_paused():
        rescored = _rescore_rows(ctx, run.id, keys, chosen)
    before = dict(run.summary)
    after = aggregate.summarize(rescored.verdicts, [tags[p] for p in rescored.positions])
    changed = [index for index, old in rescored.changed]
    if apply:
        verdicts = {rescored.positions[i]: rescored.verdicts[i] for i in changed}
        _apply(ctx, run, chosen, verdicts, after)
    detail = access.can(ctx, Action.RUN_READ_DETAIL, benchmark, run)
    return Rescore(
        run.id,
        apply,
        chosen,
        scoring.visible_summary(before, detail),
        scoring.visible_summary(after, detail),
        len(changed),
        [_change(rescored, index, old) for index, old in rescored.changed[:MAX_CHANGES_SHOWN]]
        if detail
        else [],
    )


@dataclass
class _Rescored:
    """New verdicts in position order, and (index, old verdict) for those that changed."""

    positions: list[int]
    verdicts: list[Scored]
    changed: list[tuple[int, tuple[str, float, str | None]]]


def _rescore_rows(
    ctx: Context, run_id: str, keys: list[Key], settings: dict[str, Any]
) -> _Rescored:
    # Log-probs are decoded only for the method that reads them: JSON per row is costly.
    logprobs = RunResult.letter_logprobs if settings.get("method") == LOGPROB else null()
    rows = ctx.session.connection().execute(
        select(
            RunResult.position,
            RunResult.raw,
            RunResult.error,
            logprobs,
            RunResult.outcome,
            RunResult.score,
            RunResult.extracted,
        )
        .where(RunResult.run_id == run_id)
        .order_by(RunResult.position)
    )
    result = _Rescored([], [], [])
    for position, raw, error, letters, outcome, score, extracted in rows:
        answer = Answer(position, "", raw, error, 0, 0, 0, 1, letters)
        verdict = registry.score(answer, keys[position], settings)
        if (verdict.outcome, verdict.score, verdict.extracted) != (outcome, score, extracted):
            result.changed.append((len(result.verdicts), (outcome, score, extracted)))
        result.positions.append(position)
        result.verdicts.append(verdict)
    return result


def _change(rescored: _Rescored, index: int, old: tuple[str, float, str | None]) -> dict[str, Any]:
    new = rescored.verdicts[index]
    return {
        "position": rescored.positions[index],
        "before": {"outcome": old[0], "score": old[1], "extracted": old[2]},
        "after": {"outcome": new.outcome, "score": new.score, "extracted": new.extracted},
    }


@contextmanager
def _collector_paused() -> Iterator[None]:
    # Rescoring a million answers keeps millions of small objects alive; the cyclic garbage
    # collector would walk them again and again (a third of the time, measured) although
    # nothing made here forms a cycle.
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _apply(
    ctx: Context,
    run: Run,
    settings: dict[str, Any],
    verdicts: dict[int, Scored],
    summary: dict[str, Any],
) -> None:
    execution.update_verdicts(ctx, run.id, verdicts)
    run.scoring = settings
    execution.set_summary(run, summary)
    audit.record(
        ctx, audit.AuditAction.RUN_RESCORE, "run", run.id, scoring=settings, changed=len(verdicts)
    )
