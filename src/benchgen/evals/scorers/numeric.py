"""Numeric scoring: the last number in the final answer against the accepted numbers."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from benchgen.evals.scorers import verdict
from benchgen.evals.scorers.extract import extract_final_answer
from benchgen.evals.types import Key, Scored

DEFAULT_TOLERANCE = 0.0
DEFAULT_REL_TOLERANCE = 0.0

# Thousands separators only in groups of three ("1,234,567"), so "1,2" reads as two numbers;
# the look-behind keeps "CO2" or "v1.5" from yielding a number out of a word.
_NUMBER = re.compile(
    r"(?<![\w.])(?P<value>[-+\u2212]?(?:\d{1,3}(?:,\d{3})+(?!\d)|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?"
    r"|[-+\u2212]?\.\d+)"
    r"(?:[ \t]*/[ \t]*(?P<denominator>\d+))?"
    r"(?P<percent>[ \t]*%)?"
)


def parse_number(text: str) -> tuple[float, ...] | None:
    """The readings of the last number in `text`, or None when it holds none.

    Handles signs (also U+2212), thousands commas, decimals, exponents, simple fractions
    ("3/4") and percents. A percent has two readings, "50%" → (0.5, 50.0), so it matches
    both "0.5" and "50"; any other number has one.
    """
    # A denominator of zeros ("3/00") is no number; float, not int, reads one of any length
    # (int refuses past 4,300 digits): either failed the whole batch of answers being scored.
    matches = [m for m in _NUMBER.finditer(text) if (m.group("denominator") or "1").strip("0")]
    if not matches:
        return None
    last = matches[-1]
    value = float(last.group("value").replace(",", "").replace("\u2212", "-"))
    if last.group("denominator"):
        value /= float(last.group("denominator"))
    return (value / 100, value) if last.group("percent") else (value,)


def score_numeric(raw: str | None, key: Key, options: Mapping[str, Any]) -> Scored:
    """Correct when a reading of the answer's number is within tolerance of an accepted one.

    Args:
        raw: the model's reply; None when it gave none.
        key: the accepted answers, each holding a number.
        options: `tolerance` (absolute, default 0) and `rel_tolerance` (a fraction of the
            accepted value, default 0); the answer passes when within either.

    Returns:
        correct / wrong; no_answer when the final answer holds no number; error without a
        reply or when no accepted answer holds a number.
    """
    if raw is None:
        return verdict.NO_REPLY
    extracted = extract_final_answer(raw)
    got = parse_number(extracted) if extracted else None
    if got is None:
        return verdict.no_answer(extracted, "no number found in the final answer")
    expected = [v for answer in key.answers for v in parse_number(answer) or ()]
    if not expected:
        return verdict.errored("no accepted answer holds a number", extracted)
    absolute = float(options.get("tolerance", DEFAULT_TOLERANCE))
    relative = float(options.get("rel_tolerance", DEFAULT_REL_TOLERANCE))
    close = any(abs(g - e) <= max(absolute, relative * abs(e)) for g in got for e in expected)
    return verdict.judged(close, extracted)
