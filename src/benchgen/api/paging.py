"""Keyset cursors for lists: opaque to clients, `{"items", "next_cursor"}` everywhere."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any, Generic, TypeVar

from fastapi import Query

from benchgen.core.errors import invalid
from benchgen.services.keysets import Newest
from benchgen.services.runs.standings import Standing

Row = TypeVar("Row")
Key = TypeVar("Key")

Cursor = Annotated[
    str | None,
    Query(max_length=200, description="next_cursor of the last page, passed back as it came"),
]
MAX_POSITION = 2**31 - 1  # positions are 32-bit integers: a larger one would fail the query


@dataclass(frozen=True)
class Keyset(Generic[Row, Key]):
    """One list's order as its cursors carry it: the sort key of a row, written as JSON values
    and read back (`load` raises ValueError or TypeError on anything it did not write)."""

    name: str
    key: Callable[[Row], Key]
    dump: Callable[[Key], list[Any]]
    load: Callable[[list[Any]], Key]


def newest(name: str, key: Callable[[Row], Newest]) -> Keyset[Row, Newest]:
    """A newest-first list keyed by a time and an id."""
    return Keyset(name, key, lambda last: [last[0].isoformat(), last[1]], _load_newest)


def by_position(name: str) -> Keyset[dict[str, Any], int]:
    """A list in order of its rows' `position`."""
    return Keyset(name, lambda row: int(row["position"]), lambda last: [last], _load_position)


def standings(name: str) -> Keyset[tuple[Any, Standing], Standing]:
    """A leaderboard, keyed by where each row stands (paired with the row by the route)."""
    return Keyset(name, lambda pair: pair[1], _dump_standing, _load_standing)


def page(
    keyset: Keyset[Row, Key],
    fetch: Callable[[int, Key | None], Sequence[Row]],
    cursor: str | None,
    limit: int,
    scope: str = "",
) -> dict[str, Any]:
    """One page after `cursor` of the list `keyset` orders within `scope` (the run or benchmark
    whose rows it lists); one more row than asked tells whether another page follows.

    Raises:
        InvalidInput: not a cursor this list issued.
    """
    after = None if cursor is None else _open(keyset, scope, cursor)
    rows = fetch(limit + 1, after)
    if len(rows) <= limit:
        return {"items": list(rows), "next_cursor": None}
    return {"items": list(rows[:limit]), "next_cursor": _seal(keyset, scope, rows[limit - 1])}


def _seal(keyset: Keyset[Row, Key], scope: str, row: Row) -> str:
    body = json.dumps(keyset.dump(keyset.key(row)), separators=(",", ":")).encode()
    text = base64.urlsafe_b64encode(body).decode().rstrip("=")
    return f"{text}.{_check(keyset.name, scope, text)}"


def _open(keyset: Keyset[Row, Key], scope: str, cursor: str) -> Key:
    # The check catches garbled cursors and other lists' ones, not forgers, who need no secret:
    # a forged key only moves where a page starts, and the services still filter every row by
    # what the caller may see (a leaderboard's cursor carries no hidden column's score, and
    # one forged in is ignored), so it reveals nothing a first page would not.
    text, _, check = cursor.partition(".")
    if cursor.isascii() and hmac.compare_digest(check, _check(keyset.name, scope, text)):
        try:
            parts = json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
            if isinstance(parts, list):
                return keyset.load(parts)
        except (ValueError, TypeError):
            pass
    raise invalid(["query", "cursor"], "not a cursor from a previous page")


def _check(name: str, scope: str, text: str) -> str:
    digest = hashlib.sha256(f"{name}\0{scope}\0{text}".encode()).digest()[:9]
    return base64.urlsafe_b64encode(digest).decode()


def _load_newest(parts: list[Any]) -> Newest:
    stamp, row_id = parts
    return load_time(stamp), _row_id(row_id)


def _row_id(value: Any) -> str:
    """An id a cursor carries. Its check is no secret, so a client can forge one: an id no
    database can hold (a NUL, a lone surrogate) failed in the query, a 500.

    Raises:
        ValueError / TypeError: not such an id.
    """
    if not isinstance(value, str):
        raise TypeError("an id")
    if "\x00" in value or any("\ud800" <= char <= "\udfff" for char in value):
        raise ValueError("not an id")
    return value


def load_time(stamp: Any) -> datetime:
    """A time a cursor carries, as `datetime.isoformat` wrote it, in UTC.

    Raises:
        ValueError / TypeError: not such a time.
    """
    if not isinstance(stamp, str):
        raise TypeError("a time")
    at = datetime.fromisoformat(stamp)
    if at.tzinfo is None:
        raise ValueError("a naive time")
    try:
        # In UTC here, as the database compares it: an offset past year 1 or 9999 is no time.
        return at.astimezone(UTC)
    except OverflowError:
        raise ValueError("a time out of range") from None


def _dump_standing(standing: Standing) -> list[Any]:
    finished = standing.finished_at.isoformat() if standing.finished_at else None
    return [*standing.scores, finished, standing.run_id]


def _load_standing(parts: list[Any]) -> Standing:
    *scores, finished, run_id = parts
    return Standing(
        tuple(None if score is None else _number(score) for score in scores),
        None if finished is None else load_time(finished),
        _row_id(run_id),
    )


def _number(value: Any) -> float:
    # JSON reads NaN and Infinity too, and an integer past a float's range: none is a score.
    if type(value) not in (int, float):
        raise TypeError("a number")
    try:
        number = float(value)
    except OverflowError:
        raise ValueError("a number out of range") from None
    if not math.isfinite(number):
        raise ValueError("not a finite number")
    return number


def _load_position(parts: list[Any]) -> int:
    (position,) = parts
    if type(position) is not int or not 0 <= position <= MAX_POSITION:
        raise ValueError("not a position")
    return position
