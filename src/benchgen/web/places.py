"""Where a problem is, in a page's words: "Question 1, choice B", "Email", never `body.email`."""

from __future__ import annotations

import re
import string
from collections.abc import Mapping, Sequence
from typing import Any

# FastAPI's first step says which part of the request held the field; people never see those.
_SOURCES = frozenset({"body", "query", "path", "header", "cookie"})
# A question editor's field as the form names it: `q0-prompt` is the first question's prompt.
_EDITOR_FIELD = re.compile(r"q(\d+)-(\w+)")
# Pydantic's wording of a broken limit, in a page's: nobody should read "after validation".
_PHRASES = (
    (re.compile(r"^Value error, "), ""),
    (
        re.compile(r"^List should have at (most|least) (\d+ items?) after validation, not (\d+)"),
        r"must have at \1 \2 (this has \3)",
    ),
    (
        re.compile(r"^String should have at (most|least) (\d+ characters?)"),
        r"must be at \1 \2 long",
    ),
    (re.compile(r"^Input should be greater than or equal to "), "must be at least "),
    (re.compile(r"^Input should be less than or equal to "), "must be at most "),
    (re.compile(r"^Input should be greater than "), "must be more than "),
    (re.compile(r"^Input should be less than "), "must be less than "),
    (re.compile(r"^Input should be a valid integer.*"), "must be a whole number"),
    (re.compile(r"^Input should be a valid number.*"), "must be a number"),
)


def place_of(loc: Sequence[str | int], numbers: Mapping[int, int] | None = None) -> str:
    """`loc` in words. Questions are numbered from 1, or as `numbers` maps a question's index
    in the list the service checked to the number the page shows (blank editor rows skipped)."""
    parts = list(loc)
    if parts and parts[0] in _SOURCES:
        parts = parts[1:]
    if len(parts) >= 2 and parts[0] == "questions" and isinstance(parts[1], int):
        shown = (numbers or {}).get(parts[1], parts[1] + 1)
        return ", ".join([f"Question {shown}", *_words(parts[2:])])
    field = (
        _EDITOR_FIELD.fullmatch(parts[0]) if len(parts) == 1 and isinstance(parts[0], str) else None
    )
    if field:
        return f"Question {int(field[1]) + 1}, {field[2]}"
    words = ", ".join(_words(parts))
    return words[:1].upper() + words[1:]


def described(error: Mapping[str, Any], numbers: Mapping[int, int] | None = None) -> str:
    """One problem or warning (`{"loc", "msg"}`) as a sentence: "Question 1, prompt: …"."""
    where = place_of(error.get("loc") or [], numbers)
    message = plain(str(error.get("msg", "")))
    return f"{where}: {message}" if where else message


def plain(message: str) -> str:
    """A validation message as a page says it ("must have at most 20 items (this has 50)")."""
    for pattern, said in _PHRASES:
        message = pattern.sub(said, message)
    return message


def _words(parts: Sequence[str | int]) -> list[str]:
    words: list[str] = []
    for before, part in zip([None, *parts], parts, strict=False):
        if isinstance(part, int) and before == "choices":
            words[-1] = f"choice {_letter(part)}"
        elif isinstance(part, int):
            words.append(f"item {part + 1}")
        else:
            words.append(str(part).replace("_", " "))
    return words


def _letter(index: int) -> str:
    return string.ascii_uppercase[index] if 0 <= index < 26 else str(index + 1)
