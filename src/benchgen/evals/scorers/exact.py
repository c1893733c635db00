"""Exact-match scoring: the normalised final answer equals a normalised accepted answer."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from benchgen.evals.scorers import verdict
from benchgen.evals.scorers.extract import extract_final_answer
from benchgen.evals.scorers.normalize import normalize_text
from benchgen.evals.types import Key, Scored


def score_exact(raw: str | None, key: Key, options: Mapping[str, Any]) -> Scored:
    """Correct when the extracted answer matches any accepted answer after `normalize_text`.

    Args:
        raw: the model's reply; None when it gave none.
        key: the accepted answers.
        options: unused; exact match takes no options.

    Returns:
        correct / wrong, no_answer when nothing could be extracted, error without a reply.
    """
    if raw is None:
        return verdict.NO_REPLY
    extracted = extract_final_answer(raw)
    if extracted is None:
        return verdict.no_answer()
    target = normalize_text(extracted)
    return verdict.judged(any(target == normalize_text(a) for a in key.answers), extracted)
