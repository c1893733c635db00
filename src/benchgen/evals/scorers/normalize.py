"""SQuAD-style answer normalisation, made safe for any Unicode text."""

from __future__ import annotations

import string
import unicodedata

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
