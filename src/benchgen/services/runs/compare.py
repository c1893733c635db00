"""Two finished runs of one benchmark side by side, paired question by question: the accuracy
difference with a paired bootstrap interval and an exact McNemar test; and one item's result
explained. Comparing is for those who may see per-question results of both runs (the
benchmark's team); one item's reply is explained to whoever may read the run."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Literal

from sqlalchemy import func, select

from benchgen.core.context import Context
from benchgen.core.errors import PermissionDenied, invalid
from benchgen.core.permissions import Action
from benchgen.core.statuses import RunStatus
from benchgen.db.tables import Benchmark, Model, Question, Run, RunResult
from benchgen.services import access
from benchgen.services.runs import leaderboards
from benchgen.services.specs import MAX_QUESTIONS

Category = Literal["both_right", "both_wrong", "only_a", "only_b"]
CATEGORIES: tuple[Category, ...] = ("both_right", "both_wrong", "only_a", "only_b")
# Completed runs, and cancelled ones for the questions they answered before stopping. A failed
# run's answers may be cut short by what failed it (a broken endpoint, a key error), so a
# difference to it would say more about the failure than about the model.
COMPARABLE = frozenset({RunStatus.COMPLETED, RunStatus.CANCELLED})
CONFIDENCE = 0.95
MAX_RESAMPLES = 100_000
EXCERPT_CHARS = 160
CUT_CHARS = 2 * EXCERPT_CHARS  # of a prompt read to make its excerpt (whitespace flattens)


@dataclass(frozen=True)
class PairedStats:
    """The paired statistics of two runs' correctness on the same questions."""

    n: int
    accuracy_a: float
    accuracy_b: float
    difference: float  # accuracy B − accuracy A
    ci_low: float
    ci_high: float
    p_value: float  # exact McNemar: two-sided binomial test on the discordant pairs
    both_right: int
    both_wrong: int
    only_a: int  # right in A, wrong in B
    only_b: int  # right in B, wrong in A


@dataclass(frozen=True)
class TagDifference:
    """How the two runs did on the paired questions with one tag."""

    tag: str
    n: int
    accuracy_a: float
    accuracy_b: float
    difference: float
    only_a: int
    only_b: int


@dataclass(frozen=True)
class PairedItem:
    """One question both runs answered: an excerpt of it, each outcome and their category."""

    position: int
    prompt: str
    tags: list[str]
    outcome_a: str
    outcome_b: str
    category: Category


@dataclass(frozen=True)
class Comparison:
    """Run B against run A on the questions both answered, by tag and question by question."""

    benchmark_id: str
    benchmark_version: int
    run_a: str
    run_b: str
    model_a: str
    model_b: str
    n: int
    accuracy_a: float
    accuracy_b: float
    difference: float
    ci_low: float
    ci_high: float
    confidence: float
    resamples: int
    p_value: float
    both_right: int
    both_wrong: int
    only_a: int
    only_b: int
    unpaired_a: int  # questions only run A answered (left out of every figure)
    unpaired_b: int
    # Whether a run's official score was corrected by hand: the figures here come from its
    # answers as scored, so they may differ from its page and the leaderboard.
    edited_a: bool
    edited_b: bool
    tags: list[TagDifference]
    items: list[PairedItem]


def compare_runs(
    ctx: Context, run_a: str, run_b: str, *, resamples: int = 10_000, seed: int = 0
) -> Comparison:
    """Compare run B with run A question by question (paired by position).

    Only questions both runs answered count; those answered in one run only are counted apart
    (`unpaired_a`, `unpaired_b`). A question is right when its outcome is "correct"; errors and
    no-answers count as wrong, as in a run's own accuracy.

    Args:
        ctx: The acting principal's unit of work.
        run_a: The reference run.
        run_b: The run compared with it (the difference is B − A).
        resamples: Bootstrap resamples for the interval (1..MAX_RESAMPLES).
        seed: Seed of the bootstrap's generator: the same runs and seed give the same interval.

    Raises:
        NotFound: either run is not visible to the principal.
        PermissionDenied: the principal may not see per-question results of both runs.
        InvalidInput: the runs are on different benchmarks or benchmark versions, either has
            not finished (completed or cancelled), the benchmark is custom (its runs have no
            per-question results), either answered no question, they share no answered
            question, or `resamples` is out of range.
    """
    if not 1 <= resamples <= MAX_RESAMPLES:
        raise invalid(["resamples"], f"must be from 1 to {MAX_RESAMPLES}")
    first = access.require_run(ctx, run_a, Action.RUN_READ)
    second = access.require_run(ctx, run_b, Action.RUN_READ)
    benchmark = _comparable(ctx, first, second)
    for run in (first, second):
        if not access.can(ctx, Action.RUN_READ_DETAIL, benchmark, run):
            # Pairs count questions right in both runs, or in one only: with a model that
            # answers as its owner chooses, each pair of runs scores a chosen set of questions,
            # where an outsider's run may tell one figure over the whole benchmark.
            raise PermissionDenied(
                "Only the benchmark's owner and collaborators compare runs question by "
                "question; each run's own score is on its page.",
                {"id": run.id},
            )
    outcomes_a, outcomes_b = _outcomes(ctx, first.id), _outcomes(ctx, second.id)
    for name, outcomes in (("a", outcomes_a), ("b", outcomes_b)):
        if not outcomes:  # cancelled before its first answer: no pairing could help
            raise invalid([name], "the run answered no question")
    paired = sorted(outcomes_a.keys() & outcomes_b.keys())
    if not paired:
        raise invalid(["b"], "the two runs share no answered question")
    right_a = [outcomes_a[p] == "correct" for p in paired]
    right_b = [outcomes_b[p] == "correct" for p in paired]
    stats = paired_stats(right_a, right_b, resamples=resamples, seed=seed)
    questions = _questions(ctx, benchmark.id)
    tags = _tag_differences(paired, right_a, right_b, questions)
    items = [_item(p, outcomes_a[p], outcomes_b[p], questions.get(p, ("", ()))) for p in paired]
    return Comparison(
        benchmark_id=benchmark.id,
        benchmark_version=first.benchmark_version,
        run_a=first.id,
        run_b=second.id,
        model_a=_entrant(ctx, first),
        model_b=_entrant(ctx, second),
        **vars(stats),
        confidence=CONFIDENCE,
        resamples=resamples,
        unpaired_a=len(outcomes_a) - len(paired),
        unpaired_b=len(outcomes_b) - len(paired),
        edited_a=first.score_edit is not None,
        edited_b=second.score_edit is not None,
        tags=tags,
        items=items,
    )


def paired_stats(
    right_a: list[bool], right_b: list[bool], *, resamples: int = 10_000, seed: int = 0
) -> PairedStats:
    """Accuracies, their difference B − A with a paired percentile-bootstrap interval, and the
    exact McNemar p-value, for two equally long lists of per-question correctness.

    Raises:
        ValueError: the lists are empty or of different lengths.
    """
    if not right_a or len(right_a) != len(right_b):
        raise ValueError("need two non-empty lists of the same length")
    n = len(right_a)
    cells = Counter(zip(right_a, right_b, strict=True))
    both_right, both_wrong = cells[(True, True)], cells[(False, False)]
    only_a, only_b = cells[(True, False)], cells[(False, True)]
    low, high = _bootstrap(n, only_a, only_b, resamples, seed)
    return PairedStats(
        n=n,
        accuracy_a=(both_right + only_a) / n,
        accuracy_b=(both_right + only_b) / n,
        difference=(only_b - only_a) / n,
        ci_low=low,
        ci_high=high,
        p_value=mcnemar_p(only_a, only_b),
        both_right=both_right,
        both_wrong=both_wrong,
        only_a=only_a,
        only_b=only_b,
    )


def mcnemar_p(only_a: int, only_b: int) -> float:
    """The exact (binomial) McNemar test's two-sided p-value: under no difference, each
    discordant pair is as likely to favour A as B. 1 when there is no discordant pair."""
    discordant = only_a + only_b
    if discordant == 0:
        return 1.0
    # Imported here: SciPy's statistics take most of a second to import, which every server
    # and agent process would pay at start-up for a comparison few of them are asked for.
    from scipy.stats import binomtest

    return min(1.0, float(binomtest(only_b, discordant, 0.5).pvalue))


def _bootstrap(n: int, only_a: int, only_b: int, resamples: int, seed: int) -> tuple[float, float]:
    """The percentile interval of B − A over resamples of the n paired questions.

    Each question's difference is −1 (only A right), +1 (only B right) or 0, so a resample of
    n question indices drawn with replacement is described exactly by how many of each kind it
    drew: a multinomial draw with the observed proportions. Drawing those counts gives the same
    distribution as drawing indices, in time independent of n (10,000 × 10,000 indices would
    not fit a request).
    """
    import numpy as np  # with SciPy's, on the first comparison (see mcnemar_p)

    rng = np.random.default_rng(seed)
    proportions = [only_a / n, only_b / n, (n - only_a - only_b) / n]
    counts = rng.multinomial(n, proportions, size=resamples)
    differences = (counts[:, 1] - counts[:, 0]) / n
    tail = (1 - CONFIDENCE) / 2
    # Outward to the nearest difference a resample can give (a multiple of 1/n): interpolating
    # between two of them would show bounds no resample can reach (+15.1 points out of 20).
    low = np.quantile(differences, tail, method="lower")
    high = np.quantile(differences, 1 - tail, method="higher")
    return float(low), float(high)


def explain_result(ctx: Context, run_id: str, position: int) -> dict[str, Any]:
    """One question's result in a run: the prompt sent, the reply and, for those who may see
    per-question results, the extracted answer, the verdict, its reasoning and the expected
    answer.

    Args:
        ctx: The acting principal's unit of work.
        run_id: The run.
        position: The question's position, counting from 0.

    Raises:
        NotFound: the run is not visible to the principal.
        InvalidInput: the benchmark is custom (no per-question results), `position` is
            outside 0..MAX_QUESTIONS - 1, or the run has no result at `position`.
    """
    if not 0 <= position < MAX_QUESTIONS:
        # Past the database's integers, the lookup itself failed (a 500, not a refusal).
        raise invalid(["position"], f"must be from 0 to {MAX_QUESTIONS - 1}")
    run = access.require_run(ctx, run_id, Action.RUN_READ)
    benchmark = _benchmark(ctx, run)
    _require_items(benchmark, ["run_id"])
    result = ctx.session.get(RunResult, (run.id, position))
    if result is None:
        raise invalid(["position"], f"the run has no result at position {position}")
    question = ctx.session.scalar(
        select(Question).where(
            Question.benchmark_id == run.benchmark_id, Question.position == position
        )
    )
    shown: dict[str, Any] = {
        "run_id": run.id,
        "position": position,
        "prompt": question.prompt if question else None,
        "choices": question.choices if question else None,
        "prompt_sent": result.prompt_sent,
        "reply": result.raw,
        "error": result.error,
    }
    # The verdict, the extraction and the judge's reasoning reveal the key as surely as the
    # expected answer does: all of them only for the benchmark's team, as in the results.
    detail = access.can(ctx, Action.RUN_READ_DETAIL, benchmark, run)
    shown["detail_visible"] = detail
    if detail:
        shown.update(
            extracted=result.extracted,
            outcome=result.outcome,
            score=result.score,
            reasoning=result.reasoning,
            expected=list(question.answers) if question else None,
        )
    return shown


def _comparable(ctx: Context, first: Run, second: Run) -> Benchmark:
    if first.benchmark_id != second.benchmark_id:
        raise invalid(["b"], "the runs are on different benchmarks")
    if first.benchmark_version != second.benchmark_version:
        raise invalid(
            ["b"],
            f"the runs are on different versions of the benchmark "
            f"({first.benchmark_version} and {second.benchmark_version})",
        )
    benchmark = _benchmark(ctx, first)
    _require_items(benchmark, ["a"])
    for name, run in (("a", first), ("b", second)):
        if run.status not in COMPARABLE:
            raise invalid([name], f"the run is {run.status}: only finished runs compare")
    return benchmark


def _benchmark(ctx: Context, run: Run) -> Benchmark:
    benchmark = ctx.session.get(Benchmark, run.benchmark_id)
    assert benchmark is not None  # require_run found it
    return benchmark


def _require_items(benchmark: Benchmark, loc: list[str | int]) -> None:
    if benchmark.format == "custom":
        raise invalid(
            loc,
            "runs of a custom benchmark are scored by its bundle's programs as a whole: "
            "they have no per-question results",
        )


def _outcomes(ctx: Context, run_id: str) -> dict[int, str]:
    rows = ctx.session.execute(
        select(RunResult.position, RunResult.outcome).where(RunResult.run_id == run_id)
    )
    return {position: outcome for position, outcome in rows}


def _questions(ctx: Context, benchmark_id: str) -> dict[int, tuple[str, tuple[str, ...]]]:
    """Excerpts and tags by position; the excerpt is cut in the database, so a benchmark of
    long prompts is not loaded whole (one character more than kept tells whether it was cut)."""
    cut = func.substr(Question.prompt, 1, CUT_CHARS + 1)
    rows = ctx.session.execute(
        select(Question.position, cut, Question.tags).where(Question.benchmark_id == benchmark_id)
    )
    return {
        position: (_excerpt(prompt), tuple(dict.fromkeys(tags or ())))
        for position, prompt, tags in rows
    }


def _excerpt(prompt: str) -> str:
    flat = " ".join(prompt[:CUT_CHARS].split())
    if len(prompt) <= CUT_CHARS and len(flat) <= EXCERPT_CHARS:
        return flat
    # Cut, even where the part kept flattens short (indented code, blank lines): without the
    # ellipsis, the start of a question read as all of it.
    return flat[: EXCERPT_CHARS - 1] + "…"


def _tag_differences(
    paired: list[int],
    right_a: list[bool],
    right_b: list[bool],
    questions: dict[int, tuple[str, tuple[str, ...]]],
) -> list[TagDifference]:
    by_tag: dict[str, list[tuple[bool, bool]]] = {}
    for position, a, b in zip(paired, right_a, right_b, strict=True):
        for tag in questions.get(position, ("", ()))[1]:
            by_tag.setdefault(tag, []).append((a, b))
    return [_tag_difference(tag, pairs) for tag, pairs in sorted(by_tag.items())]


def _tag_difference(tag: str, pairs: list[tuple[bool, bool]]) -> TagDifference:
    n = len(pairs)
    right_a = sum(a for a, _ in pairs)
    right_b = sum(b for _, b in pairs)
    only_a = sum(a and not b for a, b in pairs)
    only_b = sum(b and not a for a, b in pairs)
    return TagDifference(tag, n, right_a / n, right_b / n, (right_b - right_a) / n, only_a, only_b)


def _item(
    position: int, outcome_a: str, outcome_b: str, question: tuple[str, tuple[str, ...]]
) -> PairedItem:
    a, b = outcome_a == "correct", outcome_b == "correct"
    category: Category = (
        ("both_right" if b else "only_a") if a else ("only_b" if b else "both_wrong")
    )
    prompt, tags = question
    return PairedItem(position, prompt, list(tags), outcome_a, outcome_b, category)


def _entrant(ctx: Context, run: Run) -> str:
    model = ctx.session.get(Model, run.model_id) if run.model_id else None
    return leaderboards.entrant_name(run, model.name if model else None)
