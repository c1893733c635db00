"""Regex scoring: accepted answers are patterns that must match the whole final answer."""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any

from benchgen.evals.scorers import verdict
from benchgen.evals.scorers._overlap import end_of_class, overlapping_repeats
from benchgen.evals.scorers.extract import extract_final_answer
from benchgen.evals.types import Key, Scored

MAX_PATTERN_CHARS = 500
MAX_ANSWER_CHARS = 1000
MAX_OVERLAPPING_REPEATS = 2  # `_overlap.overlapping_repeats`: three take polynomial time
DEFAULT_CASE_INSENSITIVE = True
_REPEAT = re.compile(r"[*+]|\{\d*,?\d*\}")
# Inside a repeated group an optional atom is a repeat too: `(a?){30}` tries 2**30 ways.
_INNER_REPEAT = re.compile(r"[*+?]|\{\d*,?\d*\}")


def check_pattern(pattern: str) -> None:
    """Refuse a pattern that is too long, invalid, or prone to catastrophic backtracking.

    Python's `re` has no time limit, so a pattern such as `(a+)+b` could stall a worker for
    hours on a short answer. Refused: a repeated group that itself holds a repeat (an optional
    `?` too) or an alternation, and more than MAX_OVERLAPPING_REPEATS unbounded repeats that
    can take the same characters (`.*a.*a.*a`). This is a heuristic, conservative guard;
    lengths are capped as well.

    Raises:
        ValueError: the pattern is refused; the message says why.
    """
    if len(pattern) > MAX_PATTERN_CHARS:
        raise ValueError(f"pattern is longer than {MAX_PATTERN_CHARS} characters")
    try:
        re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"invalid regular expression {pattern!r}: {exc}") from None
    if _has_nested_repeat(pattern):
        raise ValueError(
            f"pattern {pattern!r} repeats a group that itself repeats or alternates, "
            "which can take exponential time; rewrite it without nesting"
        )
    if overlapping_repeats(pattern) > MAX_OVERLAPPING_REPEATS:
        raise ValueError(
            f"pattern {pattern!r} has more than {MAX_OVERLAPPING_REPEATS} unbounded repeats "
            "(such as .* or \\d+) that can take the same characters, which can take "
            "polynomial time on a long answer; bound them ({0,20}) or use fewer"
        )


def score_regex(raw: str | None, key: Key, options: Mapping[str, Any]) -> Scored:
    """Correct when any accepted pattern fully matches the extracted final answer.

    A single trailing full stop is also tried without it ("Paris." matches `paris`), since
    models end sentences with one and authors rarely write it into patterns.

    Args:
        raw: the model's reply; None when it gave none.
        key: the accepted answers, each a regular expression.
        options: `case_insensitive` (bool, default True).

    Returns:
        correct / wrong; no_answer when nothing could be extracted; error without a reply or
        when a pattern is refused by `check_pattern`.
    """
    if raw is None:
        return verdict.NO_REPLY
    extracted = extract_final_answer(raw)
    if extracted is None:
        return verdict.NO_ANSWER
    if len(extracted) > MAX_ANSWER_CHARS:
        reason = f"answer longer than {MAX_ANSWER_CHARS} characters is not matched"
        return verdict.judged(False, extracted[:MAX_ANSWER_CHARS], reasoning=reason)
    flags = re.IGNORECASE if options.get("case_insensitive", DEFAULT_CASE_INSENSITIVE) else 0
    try:
        patterns = [_compiled(answer, flags) for answer in key.answers]
    except ValueError as exc:
        return verdict.errored(str(exc), extracted)
    texts = {extracted, extracted.removesuffix(".")}
    return verdict.judged(any(p.fullmatch(t) for p in patterns for t in texts), extracted)


@functools.lru_cache(maxsize=1024)
def _compiled(pattern: str, flags: int) -> re.Pattern[str]:
    check_pattern(pattern)
    return re.compile(pattern, flags)


def _has_nested_repeat(pattern: str) -> bool:
    """Whether a repeated group contains a repeat or an alternation (at any depth)."""
    risky = [False]  # one flag per open group: it holds a repeat or an alternation
    pos = 0
    while pos < len(pattern):
        ch = pattern[pos]
        if ch == "\\":
            pos += 2
            continue
        if ch == "[":
            pos = end_of_class(pattern, pos)
            continue
        if ch == "(":
            risky.append(False)
            if pattern.startswith("?", pos + 1):
                pos += 1  # "(?:", "(?P<name>", "(?=": group syntax, not an optional atom
        elif ch == ")" and len(risky) > 1:
            inner = risky.pop()
            if inner and _REPEAT.match(pattern, pos + 1):
                return True
            risky[-1] = risky[-1] or inner
        elif ch == "|" or _INNER_REPEAT.match(pattern, pos):
            risky[-1] = True
        pos += 1
    return False
