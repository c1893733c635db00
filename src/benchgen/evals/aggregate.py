"""Summaries of scored answers: accuracy with a Wilson interval, overall and per tag."""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

from benchgen.evals.types import Scored

Z_95 = 1.959964


def wilson_interval(k: int, n: int, z: float = Z_95) -> tuple[float, float]:
    """The Wilson score interval for k successes in n trials (95% by default).

    Chosen over the normal approximation because it stays inside [0, 1] and behaves at
    k = 0, k = n and small n.

    Raises:
        ValueError: n < 1, or k outside 0..n.
    """
    if n < 1 or not 0 <= k <= n:
        raise ValueError(f"need 0 <= k <= n and n >= 1, got k={k}, n={n}")
    p = k / n
    z2 = z * z
    denominator = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denominator
    # Rounding can push a bound a hair past 0 or 1 at k = 0 or k = n.
    return max(0.0, centre - half), min(1.0, centre + half)


def summarize(scored: list[Scored], tags: list[tuple[str, ...]]) -> dict[str, Any]:
    """Summarise a run: counts, accuracy, its Wilson 95% interval, and the same per tag.

    Errors and no-answers count as not correct. With no answers, accuracy, rates, the mean
    score and the interval are None.

    Args:
        scored: one verdict per question.
        tags: the tags of each question, in the same order as `scored`.

    Raises:
        ValueError: `scored` and `tags` differ in length.
    """
    if len(scored) != len(tags):
        raise ValueError(f"{len(scored)} scored answers but {len(tags)} tag tuples")
    n = len(scored)
    summary = _accuracy(n, sum(s.outcome == "correct" for s in scored))
    no_answer = sum(s.outcome == "no_answer" for s in scored)
    summary["no_answer"] = no_answer
    summary["no_answer_rate"] = no_answer / n if n else None
    summary["errors"] = sum(s.outcome == "error" for s in scored)
    summary["mean_score"] = sum(s.score for s in scored) / n if n else None
    summary["per_tag"] = _per_tag(scored, tags)
    return summary


def _per_tag(scored: list[Scored], tags: list[tuple[str, ...]]) -> dict[str, dict[str, Any]]:
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])  # tag -> [n, correct]
    for verdict, item_tags in zip(scored, tags, strict=True):
        for tag in set(item_tags):
            counts[tag][0] += 1
            counts[tag][1] += verdict.outcome == "correct"
    return {tag: _accuracy(n, k) for tag, (n, k) in sorted(counts.items())}


def _accuracy(n: int, correct: int) -> dict[str, Any]:
    low, high = wilson_interval(correct, n) if n else (None, None)
    return {
        "n": n,
        "correct": correct,
        "accuracy": correct / n if n else None,
        "ci_low": low,
        "ci_high": high,
    }
