"""How many unbounded repeats of a pattern can share one run of characters, one after another.

Three such repeats (`.*a.*a.*a`, `\\d+\\d+\\d+x`) try every way of sharing a long run between
them on an answer that fails the match: polynomial time, seconds to hours on 1,000 characters,
which a check for nested repeats misses. Each repeat is tried on sample characters: a repeat
joins the chain of a character it takes, and an item that must take one character, but cannot
take that one, ends its chain (`\\d+/\\d+/\\d+` is three chains of one).
"""

from __future__ import annotations

import functools
import re
import string

_SAMPLES = string.printable + "é\u00a0"
# The opening of a group: its kind, name or flags ("(?i)" is a whole group setting flags).
_OPENING = re.compile(r"\(\?(?:P<\w+>|[:=!>]|<[=!]|#[^)]*\)|[aiLmsux-]+[:)])?")
_LOOKAROUND = ("(?=", "(?!", "(?<=", "(?<!")
_QUANTIFIER = re.compile(r"(?:(?P<char>[*+?])|\{(?P<low>\d*)(?P<comma>,?)(?P<high>\d*)\})[?+]?")
_ZERO_WIDTH = frozenset({"^", "$", r"\b", r"\B", r"\A", r"\Z"})


def overlapping_repeats(pattern: str) -> int:
    """The longest chain of unbounded repeats that can share a run of one sample character
    (a lookaround's repeats chain apart: it is matched once where it stands)."""
    chains = [0] * len(_SAMPLES)  # for each sample character: the repeats chained so far
    longest = 0
    opened: list[tuple[int, list[int], bool]] = []  # each open group: start, chains, lookaround
    pos = 0
    while pos < len(pattern):
        if pattern[pos] == "(":
            opening = _OPENING.match(pattern, pos)
            end = opening.end() if opening else pos + 1
            if not pattern.startswith(")", end - 1):
                opened.append((pos, chains[:], pattern.startswith(_LOOKAROUND, pos)))
            pos = end
            continue
        if pattern[pos] == "|":
            chains = opened[-1][1][:] if opened else [0] * len(_SAMPLES)  # it starts again
            pos += 1
            continue
        if pattern[pos] == ")" and opened:
            start, before, lookaround = opened.pop()
            pos += 1
            quantifier = _QUANTIFIER.match(pattern, pos)
            if lookaround or quantifier:
                chains = before  # a lookaround takes nothing; a repeated group counts whole
            if quantifier and not lookaround:
                chains = _after(chains, pattern[start:pos], quantifier)
                pos = quantifier.end()
            longest = max(longest, *chains)
            continue
        end = _atom_end(pattern, pos)
        atom, quantifier = pattern[pos:end], _QUANTIFIER.match(pattern, end)
        if atom not in _ZERO_WIDTH:
            chains = _after(chains, atom, quantifier)
            longest = max(longest, *chains)
        pos = quantifier.end() if quantifier else end
    return longest


def _after(chains: list[int], atom: str, quantifier: re.Match[str] | None) -> list[int]:
    """The chains after `atom` with its `quantifier` (None: exactly once)."""
    low, unbounded = _bounds(quantifier)
    takes = _takes(atom)
    if unbounded:
        return [
            n + 1 if took else (n if low == 0 else 0) for n, took in zip(chains, takes, strict=True)
        ]
    if low == 0:
        return chains  # optional and bounded: it may take nothing
    return [n if took else 0 for n, took in zip(chains, takes, strict=True)]


def _bounds(quantifier: re.Match[str] | None) -> tuple[int, bool]:
    """How many times the quantifier asks at least, and whether it has no upper bound."""
    if quantifier is None:
        return 1, False
    char = quantifier.group("char")
    if char:
        return (1 if char == "+" else 0), char != "?"
    low = int(quantifier.group("low") or 0)
    return low, bool(quantifier.group("comma")) and not quantifier.group("high")


@functools.lru_cache(maxsize=4096)
def _takes(atom: str) -> tuple[bool, ...]:
    """Which sample characters `atom` can take (in any case); all of them when it cannot be
    tried alone (a back-reference)."""
    try:
        compiled = re.compile(atom, re.IGNORECASE)
    except re.error:
        return (True,) * len(_SAMPLES)
    return tuple(compiled.fullmatch(char) is not None for char in _SAMPLES)


def _atom_end(pattern: str, start: int) -> int:
    if pattern[start] == "\\":
        return start + 2
    if pattern[start] == "[":
        return end_of_class(pattern, start)
    return start + 1


def end_of_class(pattern: str, start: int) -> int:
    """The index just past the character class opening at `start`."""
    pos = start + 1
    if pattern.startswith("^", pos):
        pos += 1
    if pattern.startswith("]", pos):
        pos += 1  # a "]" first in a class is a literal
    while pos < len(pattern) and pattern[pos] != "]":
        pos += 2 if pattern[pos] == "\\" else 1
    return pos + 1
