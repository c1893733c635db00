"""A run's stored verdicts, read, overwritten and summarised without permission checks: for
execution and rescoring, which have required their actions first."""

from __future__ import annotations

from collections import defaultdict
from typing import Any, cast

from sqlalchemy import Table, bindparam, select, update
from sqlalchemy.orm import Session, object_session

from benchgen.core.context import Context
from benchgen.db.session import execute_many
from benchgen.db.tables import Question, Run, RunResult, RunSample
from benchgen.evals import aggregate, sampling
from benchgen.evals.scorers import registry
from benchgen.evals.types import Outcome, Scored
from benchgen.services.benchmarks import _question_store


def update_verdicts(ctx: Context, run_id: str, verdicts: dict[int, Scored]) -> None:
    """Overwrite stored verdicts with one executemany UPDATE (not one ORM object per row)."""
    if not verdicts:
        return
    table = RunResult.__table__
    assert isinstance(table, Table)
    execute_many(
        ctx.session,
        update(table)
        .where(table.c.run_id == bindparam("b_run"), table.c.position == bindparam("b_pos"))
        .values(
            outcome=bindparam("b_outcome"),
            score=bindparam("b_score"),
            extracted=bindparam("b_extracted"),
            reasoning=bindparam("b_reasoning"),
        ),
        ("b_outcome", "b_score", "b_extracted", "b_reasoning", "b_run", "b_pos"),
        [
            (v.outcome, v.score, v.extracted, v.reasoning, run_id, position)
            for position, v in verdicts.items()
        ],
    )


def summarise(ctx: Context, run: Run) -> None:
    """Recompute a run's aggregates and scores from its stored results."""
    _, tags = _question_store.load_keys(ctx, run.benchmark_id)
    verdicts, positions = stored_verdicts(ctx, run.id)
    set_summary(run, aggregate.summarize(verdicts, [tags[p] for p in positions]))


def stored_verdicts(ctx: Context, run_id: str) -> tuple[list[Scored], list[int]]:
    """The stored verdicts of a run in position order (one query)."""
    rows = ctx.session.execute(
        select(RunResult.position, RunResult.outcome, RunResult.score, RunResult.extracted)
        .where(RunResult.run_id == run_id)
        .order_by(RunResult.position)
    ).all()
    verdicts = [
        Scored(cast(Outcome, outcome), score, extracted) for _, outcome, score, extracted in rows
    ]
    return verdicts, [row[0] for row in rows]


def set_summary(run: Run, summary: dict[str, Any]) -> None:
    """Store aggregates and derive the leaderboard columns from them. A run with several
    samples per question also gets pass@k and majority vote, every sample scored again with
    the run's scoring as it is now (so rescoring, which sets it first, updates them too)."""
    session = object_session(run)
    if session is not None:
        summary = with_sampling(session, run, summary, run.scoring)
    run.summary = summary
    # The owner's hand correction stays in force over whatever is computed again.
    run.scores = {"accuracy": summary.get("accuracy"), **edited_columns(run.score_edit, run.scores)}


def edited_columns(score_edit: dict[str, Any] | None, in_force: dict[str, Any]) -> dict[str, Any]:
    """The columns an owner corrected by hand, with their values. Edits stored before the
    columns were recorded name none: those are the values in force that differ from `before`."""
    if not score_edit:
        return {}
    if "scores" in score_edit:
        return dict(score_edit["scores"])
    before = score_edit.get("before", {})
    return {key: value for key, value in in_force.items() if before.get(key) != value}


def with_sampling(
    session: Session, run: Run, summary: dict[str, Any], scoring: dict[str, Any]
) -> dict[str, Any]:
    """`summary` with pass@k and majority vote when the run asked several samples per question,
    every sample scored with `scoring` (a rescore's preview shows what applying it would)."""
    if int((run.settings or {}).get("samples", 1)) <= 1:
        return summary
    figures = _sampling(session, run, scoring)
    return summary if figures is None else {**summary, "sampling": figures}


def _sampling(session: Session, run: Run, scoring: dict[str, Any]) -> dict[str, Any] | None:
    """pass@k and majority vote over every question's samples (sample 0 is its result row)."""
    keys = session.execute(
        select(Question.answers, Question.choices)
        .where(Question.benchmark_id == run.benchmark_id)
        .order_by(Question.position)
    ).all()
    try:
        score = registry.stored_scorer(scoring)
    except ValueError:  # the AI judge grades one answer per question: no sample figures
        return None
    by_position: dict[int, dict[int, Scored]] = defaultdict(dict)
    first = session.execute(
        select(RunResult.position, RunResult.raw, RunResult.error, RunResult.letter_logprobs).where(
            RunResult.run_id == run.id
        )
    )
    for position, raw, error, letters in first:
        by_position[position][0] = score(raw, error, letters, *keys[position])
    extra = session.execute(
        select(RunSample.position, RunSample.sample, RunSample.raw, RunSample.error).where(
            RunSample.run_id == run.id
        )
    )
    for position, number, raw, error in extra:
        by_position[position][number] = score(raw, error, None, *keys[position])
    if not by_position:
        return None
    ordered = [[samples[n] for n in sorted(samples)] for _, samples in sorted(by_position.items())]
    return sampling.summarize_samples(ordered)
