"""Keyset windows: newest-first lists, tie-broken by id, that start after the last row seen."""

from __future__ import annotations

from datetime import datetime
from typing import TypeVarTuple

from sqlalchemy import Select
from sqlalchemy.orm import InstrumentedAttribute

Ts = TypeVarTuple("Ts")

# The sort key of a row in a newest-first list: its time and its id.
Newest = tuple[datetime, str]


def newest_first(
    query: Select[*Ts],
    at: InstrumentedAttribute[datetime],
    row_id: InstrumentedAttribute[str],
    after: Newest | None,
) -> Select[*Ts]:
    """`query` newest first by `at`, ties by `row_id` ascending (a total order, so a key names one
    place in it), keeping only the rows that come after `after` when given."""
    if after is not None:
        stamp, last_id = after
        query = query.where((at < stamp) | ((at == stamp) & (row_id > last_id)))
    return query.order_by(at.desc(), row_id)
