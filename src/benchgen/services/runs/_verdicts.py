"""A run's stored verdicts and samples, read, overwritten, scored and summarised without
permission checks: for the services (execution, rescoring, results) that required theirs first."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping
from typing import Any, cast

from sqlalchemy import ColumnElement, Table, bindparam, select, update
from sqlalchemy.orm import InstrumentedAttribute, Session, object_session

from benchgen.core.context import Context
from benchgen.db.session import execute_many
from benchgen.db.tables import Question, Run, RunResult, RunSample
from benchgen.evals import aggregate, sampling
from benchgen.evals.scorers import registry
from benchgen.evals.types import Outcome, Scored
from benchgen.services.benchmarks import _question_store

MAX_LISTED = 1000  # positions bound one by one in a query at most


def update_verdicts(
    ctx: Context, run_id: str, verdicts: Mapping[int, tuple[str, float, str | None, str | None]]
) -> None:
    """Overwrite stored verdicts with one executemany UPDATE (not one ORM object per row):
    Scored values, or (outcome, score, extracted, reasoning) with an outcome no scorer gives
    (an answer awaiting the AI judge)."""
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
            (outcome, score, extracted, reasoning, run_id, position)
            for position, (outcome, score, extracted, reasoning) in verdicts.items()
        ],
    )


def lock_awaiting(ctx: Context, run_id: str, positions: list[int], outcome: str) -> set[int]:
    """Which of `positions` (ascending) still hold `outcome`, their rows locked until the
    transaction ends (on PostgreSQL; SQLite has one writer at a time): a verdict recorded in
    between, by this worker before a lost acknowledgement or by another, is not one of them."""
    if not positions:
        return set()
    rows = ctx.session.scalars(
        select(RunResult.position)
        .where(
            RunResult.run_id == run_id,
            _among(RunResult.position, positions),
            RunResult.outcome == outcome,
        )
        .with_for_update()
    )
    wanted = set(positions)
    return {position for position in rows if position in wanted}


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
    score = sample_scorer(session, run, scoring)
    if score is None:  # the AI judge grades one answer per question: no sample figures
        return None
    by_position: dict[int, dict[int, Scored]] = defaultdict(dict)
    first = session.execute(
        select(RunResult.position, RunResult.raw, RunResult.error, RunResult.letter_logprobs).where(
            RunResult.run_id == run.id
        )
    )
    for position, raw, error, letters in first:
        by_position[position][0] = score(position, raw, error, letters)
    extra = session.execute(
        select(RunSample.position, RunSample.sample, RunSample.raw, RunSample.error).where(
            RunSample.run_id == run.id
        )
    )
    for position, number, raw, error in extra:
        by_position[position][number] = score(position, raw, error, None)
    if not by_position:
        return None
    ordered = [[samples[n] for n in sorted(samples)] for _, samples in sorted(by_position.items())]
    return sampling.summarize_samples(ordered)


# Scores one sample: the question's position, the reply, its error and letter log-probs.
SampleScorer = Callable[[int, str | None, str | None, dict[str, float] | None], Scored]


def sample_scorer(
    session: Session, run: Run, scoring: dict[str, Any], positions: list[int] | None = None
) -> SampleScorer | None:
    """Scores any sample of the run's questions (those at `positions`, ascending, when given)
    with `scoring`; None for a scoring that grades one answer per question (the AI judge)."""
    try:
        score = registry.stored_scorer(scoring)
    except ValueError:
        return None
    query = select(Question.position, Question.answers, Question.choices).where(
        Question.benchmark_id == run.benchmark_id
    )
    if positions is not None:
        query = query.where(_among(Question.position, positions))
    keys = {position: (answers, choices) for position, answers, choices in session.execute(query)}

    def scored(
        position: int, raw: str | None, error: str | None, letters: dict[str, float] | None
    ) -> Scored:
        answers, choices = keys[position]
        return score(raw, error, letters, answers, choices)

    return scored


def extra_samples(
    session: Session, run: Run, positions: list[int], scored: bool
) -> dict[int, list[dict[str, Any]]]:
    """The samples 1 and up of the questions at `positions` (ascending), by question: their
    replies and, when `scored`, their verdicts with the run's scoring as it is now (as pass@k
    and majority vote score them; only a question's first sample has its verdict stored)."""
    if not positions or int((run.settings or {}).get("samples", 1)) <= 1:
        return {}
    rows = session.execute(
        select(RunSample.position, RunSample.sample, RunSample.raw, RunSample.error)
        .where(RunSample.run_id == run.id, _among(RunSample.position, positions))
        .order_by(RunSample.position, RunSample.sample)
    )
    score = sample_scorer(session, run, run.scoring, positions) if scored else None
    wanted = set(positions)
    found: dict[int, list[dict[str, Any]]] = {}
    for position, number, raw, error in rows:
        if position not in wanted:
            continue
        sample: dict[str, Any] = {"sample": number, "raw": raw, "error": error}
        if score is not None:
            verdict = score(position, raw, error, None)
            sample.update(
                extracted=verdict.extracted,
                outcome=verdict.outcome,
                correct=verdict.outcome == "correct",
                score=verdict.score,
            )
        found.setdefault(position, []).append(sample)
    return found


def _among(column: InstrumentedAttribute[int], positions: list[int]) -> ColumnElement[bool]:
    """`column` holds one of `positions` (ascending): as a range when they run without a gap or
    are too many to bind one by one (databases bound the parameters of a statement; the
    caller drops what lies between), else as a list."""
    first, last = positions[0], positions[-1]
    if last - first + 1 == len(positions) or len(positions) > MAX_LISTED:
        return column.between(first, last)
    return column.in_(positions)
