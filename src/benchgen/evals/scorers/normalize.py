"""SQuAD-style answer normalisation, made safe for any Unicode text."""

from __future__ import annotations

import re
import string
import unicodedata
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

_ARTICLES = frozenset({"a", "an", "the"})
_ASCII_PUNCTUATION = frozenset(string.punctuation)
_ASCII_PUNCTUATION_BYTES = string.punctuation.encode()
_ASCII_LOWER = bytes(range(256)).lower()  # a bytes.translate table: A-Z to a-z, the rest kept


def normalize_text(text: str) -> str:
    """Normalise an answer for comparison, as SQuAD does, extended to Unicode.

    Steps: NFKC, casefold, drop punctuation (every Unicode `P*` character plus ASCII
    `string.punctuation`, which also holds symbols like `$` and `+`), NFKC again, drop the
    whole-word articles "a", "an", "the", and collapse whitespace.

    Args:
        text: any string.

    Returns:
        The normalised string; applying the function again changes nothing.
    """
    if text.isascii():
        # The same steps for ASCII, where NFKC changes nothing, casefold is lower, and every
        # `P*` character is in string.punctuation; one bytes.translate lowers and drops them in
        # C, several times faster. Split after decoding: str.split also breaks at \x1c-\x1f.
        words = text.encode().translate(_ASCII_LOWER, _ASCII_PUNCTUATION_BYTES).decode().split()
        if _ARTICLES.isdisjoint(words):
            return " ".join(words)
        return " ".join([word for word in words if word not in _ARTICLES])
    return normalize_unicode(text)


def normalize_unicode(text: str) -> str:
    """`normalize_text` without the ASCII shortcut: the definition the shortcut must match."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    kept = "".join(ch for ch in folded if not _is_punctuation(ch))
    # Removing punctuation can leave a combining mark next to a new base letter, which NFKC
    # then composes; normalising once more keeps the function idempotent.
    recomposed = unicodedata.normalize("NFKC", kept)
    return " ".join(word for word in recomposed.split() if word not in _ARTICLES)


def written_as_one_of(reply: str, answers: Iterable[str]) -> bool:
    """Whether a reply that normalises to nothing ("the", "?") is one of `answers` as written,
    case and a final full stop aside. Normalising drops articles and punctuation, so it would
    otherwise equal every accepted answer that is itself only an article or a symbol ("A",
    "%")."""
    return as_written(reply) in map(as_written, answers)


def as_written(text: str) -> str:
    """`text` as such a reply is compared: NFKC, trimmed, case-folded, a final stop dropped."""
    return unicodedata.normalize("NFKC", text).strip().removesuffix(".").rstrip().casefold()


def _is_punctuation(ch: str) -> bool:
    return ch in _ASCII_PUNCTUATION or unicodedata.category(ch).startswith("P")


@dataclass(frozen=True)
class Steps:
    """Which normalisation steps apply; the defaults are `normalize_text`'s (number words off)."""

    nfkc: bool = True
    case: bool = True
    punctuation: bool = True
    articles: bool = True
    whitespace: bool = True
    number_words: bool = False

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> Steps:
        """The steps named in a scoring method's options (missing ones keep their default)."""
        known = {name: bool(options[name]) for name in STEP_NAMES if name in options}
        return cls(**known)


STEP_NAMES = ("nfkc", "case", "punctuation", "articles", "whitespace", "number_words")
DEFAULT_STEPS = Steps()
_UNITS = ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
_TEENS = (
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
)
_TENS_WORDS = ("twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")
# Each number word: its value and its kind, which says what may come next in one number.
_NUMBER_WORDS: dict[str, tuple[int, str]] = {
    "zero": (0, "zero"),
    **{word: (value, "unit") for value, word in enumerate(_UNITS, 1)},
    **{word: (value, "teen") for value, word in enumerate(_TEENS, 10)},
    **{word: (value, "tens") for value, word in zip(range(20, 100, 10), _TENS_WORDS, strict=True)},
    "hundred": (100, "hundred"),
    "thousand": (10**3, "scale"),
    "million": (10**6, "scale"),
    "billion": (10**9, "scale"),
}
# Which kinds may follow which in one number ("twenty one", "one hundred and five", "three
# thousand two"); any other pair starts a new number ("one two" is two numbers).
_FOLLOWS: dict[str, set[str | None]] = {
    "unit": {None, "tens", "hundred", "scale", "and"},
    "teen": {None, "hundred", "scale", "and"},
    "tens": {None, "hundred", "scale", "and"},
    "hundred": {None, "unit", "teen", "tens"},
    "scale": {None, "unit", "teen", "tens", "hundred"},
    "zero": {None},
}
_HYPHEN_IN_WORD = re.compile(r"(?<=[^\W\d_])[-\u2010\u2011](?=[^\W\d_])")


def normaliser(steps: Steps) -> Callable[[str], str]:
    """`normalize_with` for fixed steps, taking only the text: `normalize_text` itself for the
    default steps, so that scoring many answers does not compare the steps for each one."""
    if steps == DEFAULT_STEPS:
        return normalize_text
    return partial(normalize_with, steps=steps)


def normalize_with(text: str, steps: Steps) -> str:
    """`text` after the chosen steps, in `normalize_text`'s order; number words ("four") become
    digits after the rest. With the default steps this is exactly `normalize_text`."""
    if steps == DEFAULT_STEPS:
        return normalize_text(text)
    if steps.nfkc:
        text = unicodedata.normalize("NFKC", text)
    if steps.case:
        text = text.casefold()
    if steps.number_words:
        text = _HYPHEN_IN_WORD.sub(" ", text)  # "forty-two" is two number words, not one
    if steps.punctuation:
        text = "".join(ch for ch in text if not _is_punctuation(ch))
        if steps.nfkc:
            text = unicodedata.normalize("NFKC", text)
    words = text.split() if steps.whitespace or steps.articles or steps.number_words else None
    if words is None:
        return text
    if steps.articles:
        words = [word for word in words if word.casefold() not in _ARTICLES]
    if steps.number_words:
        words = _with_numbers(words)
    # Without the whitespace step the words are joined back as they were split: single spaces
    # are all that whole-word matching needs, and collapsing is exactly that step.
    return " ".join(words)


def _with_numbers(words: list[str]) -> list[str]:
    """`words` with each run of number words that makes one number replaced by its digits:
    "twenty one" is 21, "one hundred and five" 105, "three thousand" 3000, "one two" 1 2."""
    out: list[str] = []
    number: _Number | None = None
    for word in words:
        known = _NUMBER_WORDS.get(word.casefold())
        if known is None and number is not None and number.may_and(word):
            number.pending_and = word
            continue
        if number is not None and (known is None or not number.takes(*known)):
            out += number.said()
            number = None
        if known is None:
            out.append(word)
            continue
        number = number or _Number()
        number.add(*known)
    if number is not None:
        out += number.said()
    return out


@dataclass
class _Number:
    """A number being read word by word."""

    total: int = 0
    current: int = 0
    last: str | None = None
    scale: int | None = None  # the last scale word's value: the next must be smaller
    pending_and: str = ""  # an "and" kept until the word after it says it belongs

    def may_and(self, word: str) -> bool:
        """Whether `word` is an "and" this number may go on after ("one hundred and five")."""
        return word.casefold() == "and" and self.last in ("hundred", "scale")

    def takes(self, value: int, kind: str) -> bool:
        after = "and" if self.pending_and else self.last
        if after not in _FOLLOWS[kind]:
            return False
        if kind == "hundred":
            return self.current < 100
        return kind != "scale" or self.scale is None or value < self.scale

    def add(self, value: int, kind: str) -> None:
        self.pending_and = ""
        if kind == "hundred":
            self.current = (self.current or 1) * value
        elif kind == "scale":
            self.total += (self.current or 1) * value
            self.current, self.scale = 0, value
        else:
            self.current += value
        self.last = kind

    def said(self) -> list[str]:
        """The number's digits, and an "and" read after it that no number word followed."""
        return [str(self.total + self.current), *([self.pending_and] if self.pending_and else [])]
