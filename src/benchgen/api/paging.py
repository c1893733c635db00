"""Offset cursors for lists: opaque to clients, `{"items", "next_cursor"}` everywhere."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from benchgen.core.errors import invalid

Row = TypeVar("Row")


def offset_of(cursor: str | None) -> int:
    """The offset a cursor stands for.

    Raises:
        InvalidInput: not a cursor this API issued.
    """
    if cursor is None:
        return 0
    if not (cursor.isascii() and cursor.isdigit()) or len(cursor) > 9:
        raise invalid(["query", "cursor"], "not a cursor from a previous page")
    return int(cursor)


def page(
    fetch: Callable[[int, int], Sequence[Row]], cursor: str | None, limit: int
) -> dict[str, Any]:
    """Fetch one more row than asked to learn whether another page follows."""
    offset = offset_of(cursor)
    rows = fetch(limit + 1, offset)
    more = len(rows) > limit
    return {"items": list(rows[:limit]), "next_cursor": str(offset + limit) if more else None}
