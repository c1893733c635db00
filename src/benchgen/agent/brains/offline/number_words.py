"""Counts written as words ("the first three questions", "a random twenty-five"): read as the
numbers they say, so a count in words is never silently dropped."""

from __future__ import annotations

import re

_UNITS = ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
_TEENS = (
    *("ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen"),
    *("eighteen", "nineteen"),
)
_TENS = ("twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")
_VALUES = {
    **{word: index + 1 for index, word in enumerate(_UNITS)},
    **{word: index + 10 for index, word in enumerate(_TEENS)},
    **{word: (index + 2) * 10 for index, word in enumerate(_TENS)},
    "a dozen": 12,
    "a hundred": 100,
    "one hundred": 100,
}
_WORD = (
    r"(?:(?:" + "|".join(_TENS) + r")[\s-](?:" + "|".join(_UNITS) + r")"
    r"|a\s+dozen|(?:a|one)\s+hundred|" + "|".join(sorted(_VALUES, key=len, reverse=True)) + ")"
)
COUNT = r"(?:\d{1,7}|" + _WORD + r")"
"""A count as digits or words, for a named group of a pattern compiled with re.I."""


def count_of(said: str) -> int:
    """The number a count matched by `COUNT` says."""
    if said.isdigit():
        return int(said)
    parts = re.split(r"[\s-]+", said.casefold())
    joined = " ".join(parts)
    if joined in _VALUES:
        return _VALUES[joined]
    return sum(_VALUES[part] for part in parts)
