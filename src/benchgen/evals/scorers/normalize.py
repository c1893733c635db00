"""SQuAD-style answer normalisation, made safe for any Unicode text."""

from __future__ import annotations

import string
import unicodedata
from collections.abc import Callable, Mapping
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
_NUMBER_WORDS = {
    word: str(value)
    for value, word in enumerate(
        [
            "zero",
            "one",
            "two",
            "three",
            "four",
            "five",
            "six",
            "seven",
            "eight",
            "nine",
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
            "twenty",
        ]
    )
}
_TENS = {"thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80}
_NUMBER_WORDS |= {word: str(value) for word, value in _TENS.items()}
_NUMBER_WORDS |= {"ninety": "90", "hundred": "100", "thousand": "1000"}


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
        words = [_NUMBER_WORDS.get(word.casefold(), word) for word in words]
    # Without the whitespace step the words are joined back as they were split: single spaces
    # are all that whole-word matching needs, and collapsing is exactly that step.
    return " ".join(words)
