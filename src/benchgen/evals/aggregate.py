"""Summaries of scored answers: accuracy with a Wilson interval, overall and per tag."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any, Generic, TypeVar

from benchgen.evals.types import Scored

Z_95 = 1.959964
G = TypeVar("G", bound=Hashable)


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
    # At k = 0 and k = n the bounds are exactly 0 and 1; rounding left 0.9999999999999999 at
    # n = 10, an interval that no longer held its own accuracy of 1.
    low = 0.0 if k == 0 else max(0.0, centre - half)
    high = 1.0 if k == n else min(1.0, centre + half)
    return low, high


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
    tally: Tally[tuple[str, ...]] = Tally()
    for verdict, item_tags in zip(scored, tags, strict=True):
        tally.add(verdict, item_tags)
    return tally.summary(lambda item_tags: item_tags)


class Tally(Generic[G]):
    """`summarize` one answer at a time, for runs too large to hold in memory; `summarize` is
    this over lists, so both give the same numbers. Questions are grouped by any hashable
    stand-in for their tags (a tuple, the stored JSON text), read only once per group."""

    def __init__(self) -> None:
        self.n = self.correct = self.no_answer = self.errors = 0
        self.score_sum = 0.0  # added in order, as sum() did: the same float to the last bit
        self.groups: dict[G, list[int]] = {}  # tags stand-in -> [questions, correct]

    def add(self, verdict: Scored, tags: G) -> None:
        """Count one verdict of a question with these tags."""
        self.n += 1
        right = verdict.outcome == "correct"
        self.correct += right
        self.no_answer += verdict.outcome == "no_answer"
        self.errors += verdict.outcome == "error"
        self.score_sum += verdict.score
        group = self.groups.get(tags)
        if group is None:
            group = self.groups[tags] = [0, 0]
        group[0] += 1
        group[1] += right

    def add_all(self, verdicts: Sequence[Scored], tags: Sequence[G]) -> None:
        """`add` each verdict with its question's tags: the same numbers, with the verdicts
        counted by (tags, outcome) in C rather than one by one (rescoring adds millions)."""
        outcomes = [verdict.outcome for verdict in verdicts]
        for (stand_in, outcome), count in Counter(zip(tags, outcomes, strict=True)).items():
            right = count if outcome == "correct" else 0
            self.n += count
            self.correct += right
            self.no_answer += count if outcome == "no_answer" else 0
            self.errors += count if outcome == "error" else 0
            group = self.groups.setdefault(stand_in, [0, 0])
            group[0] += count
            group[1] += right
        total = self.score_sum
        for verdict in verdicts:  # one by one, in order: the sum `add` makes, to the last bit
            total += verdict.score
        self.score_sum = total

    def summary(self, tags_of: Callable[[G], Iterable[str]]) -> dict[str, Any]:
        """The summary so far; `tags_of` turns a group's stand-in into its tags."""
        n = self.n
        summary = _accuracy(n, self.correct)
        summary["no_answer"] = self.no_answer
        summary["no_answer_rate"] = self.no_answer / n if n else None
        summary["errors"] = self.errors
        summary["mean_score"] = self.score_sum / n if n else None
        summary["per_tag"] = self._per_tag(tags_of)
        return summary

    def _per_tag(self, tags_of: Callable[[G], Iterable[str]]) -> dict[str, dict[str, Any]]:
        counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])  # tag -> [n, correct]
        for stand_in, (n, correct) in self.groups.items():
            for tag in set(tags_of(stand_in)):
                counts[tag][0] += n
                counts[tag][1] += correct
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
