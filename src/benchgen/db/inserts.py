"""INSERT … ON CONFLICT DO NOTHING in the dialect in use: rows whose key exists are skipped."""

from __future__ import annotations

import importlib
from typing import Any

from sqlalchemy import Insert
from sqlalchemy.orm import Session


def insert_new(session: Session, entity: Any, keys: list[str]) -> Insert:
    """An INSERT into `entity` that skips the rows whose `keys` (a unique index) already exist,
    without an error: two writers of one key leave the first one's row."""
    dialect = session.get_bind().dialect.name
    # Both dialects spell it alike; only the one in use is loaded (PostgreSQL's costs a SQLite
    # process ~35 ms of start-up).
    make = importlib.import_module(f"sqlalchemy.dialects.{dialect}").insert
    statement: Insert = make(entity).on_conflict_do_nothing(index_elements=keys)
    return statement
