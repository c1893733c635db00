"""A query's rows as one JSON document that the database builds, for reading many rows at once."""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Float,
    Select,
    Text,
    between,
    case,
    cast,
    func,
    literal,
    select,
)
from sqlalchemy.sql.elements import ColumnElement

# Beyond this SQLite's printing of doubles can miss the last bit, and it spells infinity "Inf",
# which no JSON decoder reads: such values (NaN too) come as null, on both databases alike.
_LARGEST = 1e308
_WHOLE = 1e15


def json_rows(statement: Select[Any], dialect: str) -> Select[str]:
    """A SELECT of one text value: a JSON array holding each row of `statement` as an array of
    its columns. JSON columns come as their values, floats to the last bit (null beyond ±1e308),
    the rest as they are. The rows come in no set order: sort them after decoding.

    Why: the database builds the whole document in one step, and one `json.loads` makes the
    Python values in C. Reading row by row makes them one driver call at a time, and SQLite's
    driver takes Python's global lock back for every row, so no other thread can overlap it.
    """
    rows = statement.subquery()
    sqlite = dialect == "sqlite"
    values = [_value(column, sqlite) for column in rows.c]
    if sqlite:
        joined = func.coalesce(func.group_concat(func.json_array(*values), ","), "")
        return select(literal("[", Text) + joined + literal("]", Text))
    return select(func.coalesce(func.json_agg(func.json_build_array(*values)).cast(Text), "[]"))


def _value(column: ColumnElement[Any], sqlite: bool) -> ColumnElement[Any]:
    if isinstance(column.type, Float):
        return case((between(column, -_LARGEST, _LARGEST), _exact_float(column, sqlite)))
    if sqlite and isinstance(column.type, JSON):
        return func.json(column)  # stored as JSON text: embedded as a value, not as a string
    return column


def _exact_float(column: ColumnElement[Any], sqlite: bool) -> ColumnElement[Any]:
    """A finite float as a JSON number that decodes to the same float, never to an int."""
    # A whole number under 10^15 has 15 digits at most, which both databases keep exactly.
    small = func.abs(column) < _WHOLE
    if sqlite:
        # SQLite writes a REAL with 15 significant digits, which can change its last bits;
        # 17 keep them all. A whole number (the common score, 0 or 1) is written as it is
        # ("1.0"), sparing the costlier printing and parsing. (Its CAST saturates.)
        whole = small & (column == cast(column, BigInteger))
        return case((whole, column), else_=func.json(func.printf("%!.17g", column)))
    # PostgreSQL writes the shortest exact form, without the ".0" of a whole number; trunc()
    # cannot overflow, and the cast to bigint runs only under 10^15 (CASE keeps the order).
    whole = small & (column == func.trunc(column))
    text = case((whole, cast(cast(column, BigInteger), Text) + ".0"), else_=cast(column, Text))
    return cast(text, JSON)
