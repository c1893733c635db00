"""SQuAD-style answer normalisation, made safe for any Unicode text."""

from __future__ import annotations

import string
import unicodedata

_ARTICLES = frozenset({"a", "an", "the"})
_ASCII_PUNCTUATION = frozenset(string.punctuation)


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
    folded = unicodedata.normalize("NFKC", text).casefold()
    kept = "".join(ch for ch in folded if not _is_punctuation(ch))
    # Removing punctuation can leave a combining mark next to a new base letter, which NFKC
    # then composes; normalising once more keeps the function idempotent.
    recomposed = unicodedata.normalize("NFKC", kept)
    return " ".join(word for word in recomposed.split() if word not in _ARTICLES)


def _is_punctuation(ch: str) -> bool:
    return ch in _ASCII_PUNCTUATION or unicodedata.category(ch).startswith("P")
