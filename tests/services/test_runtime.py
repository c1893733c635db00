"""The unit of work: a busy database becomes `Unavailable` (rolled back, retryable); other
errors pass through unchanged."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

import psycopg
import psycopg.errors
import pytest
from sqlalchemy import exc as sa_exc
from sqlalchemy import func, select, text
from sqlalchemy.engine import make_url

from benchgen.core.context import Principal
from benchgen.core.errors import Unavailable
from benchgen.db.session import Database
from benchgen.db.tables import User
from benchgen.services.accounts import users
from benchgen.services.runtime import Runtime, transaction
from tests.support import OPERATOR, World

pytestmark = pytest.mark.both_backends  # busy and locked databases differ by backend

BUSY = [
    sa_exc.OperationalError("BEGIN IMMEDIATE", {}, sqlite3.OperationalError("database is locked")),
    sa_exc.TimeoutError("QueuePool limit of size 5 overflow 10 reached"),
    sa_exc.OperationalError("SELECT", {}, psycopg.errors.SerializationFailure("serialize")),
    sa_exc.OperationalError("SELECT", {}, psycopg.errors.TooManyConnections("too many")),
]
NOT_BUSY = [
    sa_exc.OperationalError("SELECT", {}, sqlite3.OperationalError("no such table: x")),
    sa_exc.IntegrityError("INSERT", {}, psycopg.errors.UniqueViolation("duplicate key")),
    RuntimeError("a bug"),
]


def user_count(runtime: Runtime) -> int:
    with transaction(runtime, OPERATOR, write=False) as ctx:
        return int(ctx.session.scalar(select(func.count()).select_from(User)) or 0)


@pytest.mark.parametrize(
    "error", BUSY, ids=lambda e: type(e.orig if hasattr(e, "orig") else e).__name__
)
def test_a_busy_database_becomes_unavailable_and_nothing_is_kept(
    runtime: Runtime, error: Exception
) -> None:
    before = user_count(runtime)
    with pytest.raises(Unavailable) as caught, transaction(runtime, OPERATOR) as ctx:
        users.create_user(ctx, "ana@example.com", "password123")
        raise error
    assert caught.value.retry_after == 1 and caught.value.__cause__ is error
    assert caught.value.http_status == 503
    assert user_count(runtime) == before


@pytest.mark.parametrize("error", NOT_BUSY, ids=lambda e: type(e).__name__)
def test_other_errors_pass_through(runtime: Runtime, error: Exception) -> None:
    with pytest.raises(type(error)) as caught, transaction(runtime, OPERATOR):
        raise error
    assert caught.value is error


@pytest.fixture
def impatient(runtime: Runtime) -> Iterator[Runtime]:
    """The same database, waiting at most 50 ms for a lock."""
    quick = Runtime(runtime.settings, Database(runtime.settings.resolved_database_url(), 50))
    yield quick
    quick.close()


def test_a_lock_held_elsewhere_is_unavailable(
    backend: str, runtime: Runtime, impatient: Runtime, world: World
) -> None:
    ana = world.user("ana@example.com")
    url = make_url(runtime.settings.resolved_database_url())
    if backend == "sqlite":
        assert url.database
        holder = sqlite3.connect(url.database, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        statement = "SELECT 1"  # the write lock is taken at BEGIN
    else:
        holder = psycopg.connect(url.set(drivername="postgresql").render_as_string(False))
        holder.execute("SELECT id FROM users WHERE id = %s FOR UPDATE", (ana,))
        statement = "SET LOCAL lock_timeout = '50ms'; SELECT id FROM users FOR UPDATE"
    try:
        with pytest.raises(Unavailable), transaction(impatient, Principal.web(ana)) as ctx:
            for part in statement.split("; "):
                ctx.session.execute(text(part))
    finally:
        holder.rollback()
        holder.close()
