"""Figures over several samples per question: unbiased pass@k and majority-vote accuracy."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

from benchgen.evals.types import Scored


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased estimate of pass@k for one question: n samples, c of them correct.

    1 - C(n-c, k) / C(n, k) (Chen et al., 2021): the chance that k samples drawn without
    replacement from the n hold at least one correct one.

    Raises:
        ValueError: k outside 1..n, or c outside 0..n.
    """
    if not 1 <= k <= n or not 0 <= c <= n:
        raise ValueError(f"need 1 <= k <= n and 0 <= c <= n, got n={n}, c={c}, k={k}")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def majority_correct(samples: Sequence[Scored]) -> bool:
    """Whether the most frequent extracted answer is a correct one (ties go to the answer seen
    first); errors and missing answers do not vote."""
    votes = [s for s in samples if s.outcome in ("correct", "wrong") and s.extracted]
    if not votes:
        return False
    counts = Counter(_vote(s) for s in votes)
    top = max(counts.values())
    winner = next(s for s in votes if counts[_vote(s)] == top)
    return winner.outcome == "correct"


def _vote(scored: Scored) -> str:
    return " ".join((scored.extracted or "").split()).casefold()


def ks_for(n: int) -> list[int]:
    """The k reported for n samples: 1, 2, 5, 10, 20 up to n, and n itself."""
    return sorted({k for k in (1, 2, 5, 10, 20) if k <= n} | {n})


def summarize_samples(per_question: Sequence[Sequence[Scored]]) -> dict[str, object]:
    """pass@k for each k of `ks_for`, majority-vote accuracy, and counts, over questions that
    each have the same number of samples (the smallest count is used for every question).

    Raises:
        ValueError: no questions, or a question without samples.
    """
    if not per_question or min(len(samples) for samples in per_question) < 1:
        raise ValueError("every question needs at least one sample")
    n = min(len(samples) for samples in per_question)
    correct = [sum(s.outcome == "correct" for s in samples[:n]) for samples in per_question]
    count = len(per_question)
    return {
        "samples": n,
        "questions": count,
        "pass_at_k": {str(k): sum(pass_at_k(n, c, k) for c in correct) / count for k in ks_for(n)},
        "majority_accuracy": sum(majority_correct(s[:n]) for s in per_question) / count,
        "errors": sum(s.outcome == "error" for samples in per_question for s in samples[:n]),
    }
