"""Named locks held until the transaction ends, for work that has no row of its own to lock."""

from __future__ import annotations

import hashlib

from sqlalchemy import text
from sqlalchemy.orm import Session


def lock_named(session: Session, name: str) -> None:
    """Wait until no other transaction holds the lock `name`, then hold it until this one ends.

    SQLite: a write transaction already holds the database lock from BEGIN IMMEDIATE, so there
    is nothing more to take. PostgreSQL: a transaction-scoped advisory lock on a 64-bit hash of
    the name (two names that collide only serialise more than they must, never less).
    """
    if session.get_bind().dialect.name != "postgresql":
        return
    digest = hashlib.blake2b(name.encode(), digest_size=8).digest()
    key = int.from_bytes(digest, "big", signed=True)
    session.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": key})
