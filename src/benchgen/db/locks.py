"""Locks held until the transaction ends: named ones, for work that has no row of its own to lock,
and the benchmark row that starting work on a benchmark and taking it away both hold."""

from __future__ import annotations

import hashlib

from sqlalchemy import select, text
from sqlalchemy.orm import Session

from benchgen.db.session import forget_memo
from benchgen.db.tables import Benchmark


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


def lock_benchmark(session: Session, benchmark_id: str, exclusive: bool) -> Benchmark | None:
    """Hold benchmark `benchmark_id`'s row until the transaction ends, read again (None when
    there is no such row): a change committed while this transaction waited is seen, on an
    object loaded before too.

    Starting work on a benchmark holds it shared (FOR KEY SHARE: starters never wait for one
    another, nor for the updates a start itself makes, such as freezing the questions); taking
    it away (deleting, unpublishing, removing a member, replacing its questions) holds it
    exclusively (FOR UPDATE). Each then waits for the other to commit: a run either starts
    before the change, which sees it, or after, and is refused. SQLite: the write transaction
    already holds the database lock, and SQLAlchemy leaves the clause out.
    """
    shared = not exclusive
    locking = (
        select(Benchmark)
        .where(Benchmark.id == benchmark_id)
        .with_for_update(read=shared, key_share=shared)
        .execution_options(populate_existing=True)
    )
    row = session.scalars(locking).first()
    # Membership facts remembered from before the wait (a collaborator checked, then removed
    # by a change this lock waited for) would let the caller act on a right it has lost.
    forget_memo(session)
    return row
