"""A run's per-question breakdown for its benchmark's team: filtered pages of results, and
accuracy by tag with 95% Wilson intervals (both rebuild the answer key, so both need detail)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Literal

from sqlalchemy import select

from benchgen.core.context import Context
from benchgen.core.errors import invalid
from benchgen.core.permissions import Action
from benchgen.db.tables import Question, Run, RunResult
from benchgen.evals.aggregate import wilson_interval
from benchgen.services import access
from benchgen.services.benchmarks.questions import LABELS
from benchgen.services.runs import _verdicts
from benchgen.services.specs import MAX_RESULTS, check_window

Show = Literal["all", "wrong", "no_answer"]
SHOWS: tuple[Show, ...] = ("all", "wrong", "no_answer")


@dataclass(frozen=True)
class TagAccuracy:
    """How a run did on the questions with one tag: counts, accuracy, its 95% interval."""

    tag: str
    n: int
    correct: int
    accuracy: float
    ci_low: float
    ci_high: float


@dataclass(frozen=True)
class BreakdownRow:
    """One question of the run as its team sees it: the answer, the key, the verdict."""

    position: int
    prompt: str
    choices: dict[str, str] | None
    tags: list[str]
    expected: str | list[str] | None
    raw: str | None
    extracted: str | None
    outcome: str
    score: float
    reasoning: str | None
    error: str | None
    latency_ms: int
    # The question's other samples (a run asking several), each scored with the run's scoring.
    samples: list[dict[str, Any]]


@dataclass(frozen=True)
class BreakdownPage:
    """A window of the rows that pass a filter, how many pass it, and every tag to filter by."""

    rows: list[BreakdownRow]
    total: int
    tags: list[str]


def tag_accuracy(ctx: Context, run_id: str) -> list[TagAccuracy]:
    """Accuracy per tag over the run's scored answers, with 95% Wilson intervals, by tag.

    A question with several tags counts once in each. Errors and no-answers count as wrong,
    as in the run's summary.

    Raises:
        NotFound: the run is not visible to the principal.
        PermissionDenied: the principal may see the run but not per-question results (a tag
            held by one question would tell whether it was right).
    """
    run = access.require_run(ctx, run_id, Action.RUN_READ_DETAIL)
    tags = _tags(ctx, run.benchmark_id)
    seen: Counter[str] = Counter()
    right: Counter[str] = Counter()
    for position, outcome in _outcomes(ctx, run):
        for tag in tags.get(position, ()):
            seen[tag] += 1
            right[tag] += outcome == "correct"
    return [accuracy_of(tag, right[tag], seen[tag]) for tag in sorted(seen)]


def accuracy_of(tag: str, correct: int, n: int) -> TagAccuracy:
    """The accuracy of `correct` out of `n` answers and its 95% Wilson interval.

    Raises:
        ValueError: n < 1, or correct outside 0..n.
    """
    low, high = wilson_interval(correct, n)
    return TagAccuracy(tag, n, correct, correct / n, low, high)


def list_breakdown(
    ctx: Context, run_id: str, show: str = "all", tag: str = "", limit: int = 50, offset: int = 0
) -> BreakdownPage:
    """A page of the run's results that pass the filter, in question order.

    Args:
        ctx: The acting principal's unit of work.
        run_id: The run.
        show: "all", "wrong" (scored wrong, not unanswered) or "no_answer".
        tag: Only questions with this tag ("" for any).
        limit: Rows in the page.
        offset: Rows to skip.

    Raises:
        NotFound: the run is not visible to the principal.
        PermissionDenied: the principal may see the run but not per-question results.
        InvalidInput: an unknown filter, or a bad window.
    """
    if show not in SHOWS:
        raise invalid(["show"], f"choose one of {', '.join(SHOWS)}")
    check_window(limit, offset, MAX_RESULTS)
    run = access.require_run(ctx, run_id, Action.RUN_READ_DETAIL)
    tags = _tags(ctx, run.benchmark_id)
    matching = [
        position
        for position, outcome in _outcomes(ctx, run)
        if (show == "all" or outcome == show) and (not tag or tag in tags.get(position, ()))
    ]
    window = matching[offset : offset + limit]
    every_tag = sorted({name for names in tags.values() for name in names})
    return BreakdownPage(_rows(ctx, run, window, tags), len(matching), every_tag)


def _outcomes(ctx: Context, run: Run) -> list[tuple[int, str]]:
    rows = ctx.session.execute(
        select(RunResult.position, RunResult.outcome)
        .where(RunResult.run_id == run.id)
        .order_by(RunResult.position)
    )
    return [(position, outcome) for position, outcome in rows]


def _tags(ctx: Context, benchmark_id: str) -> dict[int, tuple[str, ...]]:
    rows = ctx.session.execute(
        select(Question.position, Question.tags).where(Question.benchmark_id == benchmark_id)
    )
    return {position: tuple(dict.fromkeys(labels or ())) for position, labels in rows}


def _rows(
    ctx: Context, run: Run, positions: list[int], tags: dict[int, tuple[str, ...]]
) -> list[BreakdownRow]:
    """Full rows for one page only: prompts can be long, so the rest are never loaded."""
    if not positions:
        return []
    results = ctx.session.scalars(
        select(RunResult).where(RunResult.run_id == run.id, RunResult.position.in_(positions))
    )
    asked = ctx.session.execute(
        select(Question.position, Question.prompt, Question.answers, Question.choices).where(
            Question.benchmark_id == run.benchmark_id, Question.position.in_(positions)
        )
    )
    questions = {
        position: (prompt, answers, choices) for position, prompt, answers, choices in asked
    }
    by_position = {result.position: result for result in results}
    samples = _verdicts.extra_samples(ctx.session, run, positions, scored=True)
    return [
        _row(by_position[p], questions.get(p), tags.get(p, ()), samples.get(p, []))
        for p in positions
        if p in by_position
    ]


def _row(
    result: RunResult,
    question: tuple[str, list[str], list[str] | None] | None,
    tags: tuple[str, ...],
    samples: list[dict[str, Any]],
) -> BreakdownRow:
    prompt, answers, choices = question or ("", [], None)
    expected: str | list[str] | None = None
    if question is not None:
        expected = answers[0] if choices is not None and answers else list(answers)
    return BreakdownRow(
        position=result.position,
        prompt=prompt,
        choices=dict(zip(LABELS, choices, strict=False)) if choices is not None else None,
        tags=list(tags),
        expected=expected,
        raw=result.raw,
        extracted=result.extracted,
        outcome=result.outcome,
        score=result.score,
        reasoning=result.reasoning,
        error=result.error,
        latency_ms=result.latency_ms,
        samples=samples,
    )
