"""Token-F1 scoring as SQuAD defines it: multiset token overlap after `normalize_text`."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from benchgen.evals.scorers import verdict
from benchgen.evals.scorers.extract import extract_final_answer
from benchgen.evals.scorers.normalize import normalize_text, written_as_one_of
from benchgen.evals.types import Key, Scored

DEFAULT_THRESHOLD = 0.5


def token_f1(prediction: str, reference: str) -> float:
    """SQuAD's token F1: a repeated word counts as often as it appears in both (multiset).

    Both texts pass through `normalize_text` and split on whitespace. When either has no
    tokens, F1 is 1.0 if both have none and 0.0 otherwise, as in SQuAD's evaluation script.
    """
    predicted, expected = normalize_text(prediction).split(), normalize_text(reference).split()
    if not predicted or not expected:
        return float(predicted == expected)
    overlap = sum((Counter(predicted) & Counter(expected)).values())
    if overlap == 0:
        return 0.0
    precision, recall = overlap / len(predicted), overlap / len(expected)
    return 2 * precision * recall / (precision + recall)


def score_f1(raw: str | None, key: Key, options: Mapping[str, Any]) -> Scored:
    """Score by the best token F1 over the accepted answers.

    Args:
        raw: the model's reply; None when it gave none.
        key: the accepted answers.
        options: `threshold` (0..1, default 0.5): the F1 at or above which the answer counts as
            correct.

    Returns:
        `score` is the F1; correct / wrong by the threshold; no_answer when nothing could be
        extracted; error without a reply.
    """
    if raw is None:
        return verdict.NO_REPLY
    extracted = extract_final_answer(raw)
    if extracted is None:
        return verdict.NO_ANSWER
    if normalize_text(extracted):
        best = max((token_f1(extracted, answer) for answer in key.answers), default=0.0)
    else:  # no tokens ("the", "?"): SQuAD's F1 of 1.0 against every answer without any either
        best = float(written_as_one_of(extracted, key.answers))
    threshold = float(options.get("threshold", DEFAULT_THRESHOLD))
    return verdict.judged(best >= threshold, extracted, score=best)
