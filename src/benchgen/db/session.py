"""Engine and sessions: SQLite with WAL, foreign keys, busy timeout and up-front write locks."""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Sequence
from contextlib import contextmanager
from operator import itemgetter
from pathlib import Path
from typing import Any

from sqlalchemy import (
    ClauseElement,
    Connection,
    CursorResult,
    Engine,
    Update,
    create_engine,
    event,
)
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import make_url
from sqlalchemy.orm import ORMExecuteState, Session, sessionmaker
from sqlalchemy.sql.compiler import SQLCompiler

# The execution option that makes a connection BEGIN IMMEDIATE on SQLite (a writer, or a
# migration that must hold the write lock from its first statement).
IMMEDIATE = "benchgen_immediate"
# SQLite connections kept open, and opened beyond them at peaks (a request or job thread waits
# for one only past both): cheap to keep, costly to open.
SQLITE_POOL_SIZE = 16
SQLITE_POOL_OVERFLOW = 48
_MEMO = "benchgen_read_memo"
# SQLite's primary result codes for "another connection holds the lock".
_SQLITE_BUSY_CODES = frozenset({5, 6})  # SQLITE_BUSY, SQLITE_LOCKED
# PostgreSQL SQLSTATEs that say "try again later", not "this request is wrong": serialisation
# failure, deadlock, lock not available, statement/lock timeout, too many connections, and a
# server starting up or out of resources.
_PG_BUSY_STATES = frozenset(
    {"40001", "40P01", "55P03", "57014", "53000", "53300", "53400", "57P03"}
)
# PostgreSQL SQLSTATEs of a server going away: shut down by an administrator (a restart,
# pg_terminate_backend) or after a crash. Class 08 (connection exception) counts as well.
_PG_GONE_STATES = frozenset({"57P01", "57P02"})


class Database:
    """One engine per process, with a read and a write session factory."""

    def __init__(self, url: str, busy_timeout_ms: int = 30000) -> None:
        self.url = url
        self.is_sqlite = make_url(url).get_backend_name() == "sqlite"
        self.engine = self._build_engine(url, busy_timeout_ms)
        # Write sessions run on an option view of the same engine, so the begin hook can tell
        # them apart and take SQLite's write lock at BEGIN instead of at the first write.
        self._reads = sessionmaker(self.engine, expire_on_commit=False)
        self._writes = sessionmaker(
            self.engine.execution_options(**{IMMEDIATE: True}), expire_on_commit=False
        )
        for factory in (self._reads, self._writes):
            _forget_memo_on_writes(factory)

    def _build_engine(self, url: str, busy_timeout_ms: int) -> Engine:
        if not self.is_sqlite:
            return create_engine(url, pool_pre_ping=True)
        database = make_url(url).database
        if database and database != ":memory:":
            Path(database).parent.mkdir(parents=True, exist_ok=True)
        # Enough pooled connections for a busy server's request threads and workers: one past
        # the pool was closed when returned, so the next request opened a new one and SQLite
        # read the whole schema again (about a tenth of a GET's CPU under 8 clients).
        engine = create_engine(
            url,
            connect_args={"timeout": busy_timeout_ms / 1000},
            pool_size=SQLITE_POOL_SIZE,
            max_overflow=SQLITE_POOL_OVERFLOW,
        )
        _configure_sqlite(engine, busy_timeout_ms)
        return engine

    def session(self, write: bool = True) -> Session:
        """A new session; a write session takes the write lock with its first statement."""
        return self._writes() if write else self._reads()

    @property
    def safe_url(self) -> str:
        """The URL with any password hidden, fit for printing."""
        return make_url(self.url).render_as_string(hide_password=True)

    def ping(self) -> str:
        """'ok' when a trivial query succeeds (for health checks)."""
        with self.engine.connect() as conn:
            conn.exec_driver_sql("SELECT 1")
        return "ok"

    def dispose(self) -> None:
        """Close every pooled connection."""
        self.engine.dispose()


def _configure_sqlite(engine: Engine, busy_timeout_ms: int) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        # Take transaction control from the sqlite3 module so BEGIN is ours to write.
        dbapi_conn.isolation_level = None
        cursor = dbapi_conn.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        # BEGIN IMMEDIATE for writers: two writers never both read then fail to upgrade their
        # lock (SQLITE_BUSY mid-transaction); the second simply waits for the busy timeout.
        immediate = conn.get_execution_options().get(IMMEDIATE, False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


def read_memo(session: Session) -> dict[Hashable, Any]:
    """A dict where services keep facts this unit of work has read, so that deciding on the
    same object twice in one request asks the database once.

    It is emptied whenever the session writes (a flush, an ORM INSERT, UPDATE or DELETE) and
    when a transaction or savepoint ends, and while changes wait to be flushed a new, unkept
    dict is handed out: a remembered fact is never older than the unit of work's own writes.
    Each session has its own, so nothing outlives the request.
    """
    if session.new or session.dirty or session.deleted:
        return {}
    memo: dict[Hashable, Any] = session.info.setdefault(_MEMO, {})
    return memo


def forget_memo(session: Session) -> None:
    """Empty `read_memo`: after a lock was waited for, the facts read before it may be stale."""
    session.info.pop(_MEMO, None)


def _forget_memo_on_writes(factory: sessionmaker[Session]) -> None:
    def forget(session: Session, *_: Any) -> None:
        forget_memo(session)

    def forget_after_write(state: ORMExecuteState) -> None:
        if not state.is_select:
            forget(state.session)

    event.listen(factory, "after_flush", forget)
    event.listen(factory, "after_transaction_end", forget)
    event.listen(factory, "do_orm_execute", forget_after_write)


def execute_many(
    session: Session,
    statement: ClauseElement,
    names: Sequence[str],
    rows: Sequence[tuple[Any, ...]],
) -> None:
    """One executemany of `statement`, each row the values of its bound parameters `names` in
    that order, passed to the driver as they are: no type processing, so every value must
    already be what the driver stores (text, numbers, None). Per row this skips SQLAlchemy's
    parameter building and any dict, most of the Python time of a large bulk UPDATE."""
    if not rows:
        return
    connection = session.connection()
    compiled = statement.compile(dialect=connection.dialect)
    assert isinstance(compiled, SQLCompiler)  # a DML statement compiles to SQL
    if not compiled.positional:
        connection.exec_driver_sql(
            compiled.string, [dict(zip(names, row, strict=True)) for row in rows]
        )
        return
    order = [names.index(name) for name in compiled.positiontup or ()]
    if len(order) == 1:
        rows = [(row[order[0]],) for row in rows]
    elif order != list(range(len(names))):
        pick = itemgetter(*order)  # the statement's order differs: reorder each row in C
        rows = [pick(row) for row in rows]
    connection.exec_driver_sql(compiled.string, list(rows))


def rows_changed(session: Session, statement: Update) -> int:
    """Rows a conditional update changed; loaded objects are not synchronised (callers that
    read them afterwards refresh them)."""
    result = session.execute(statement.execution_options(synchronize_session=False))
    assert isinstance(result, CursorResult)
    return result.rowcount


def database_words(error: BaseException) -> str | None:
    """What the database said of a failed statement (its first line), without the statement and
    the parameters SQLAlchemy's own text quotes; None for an error that is no such failure."""
    if not isinstance(error, sa_exc.StatementError) or error.orig is None:
        return None
    said = str(error.orig).strip().splitlines()
    return f"{type(error.orig).__name__}: {said[0] if said else ''}"


def is_busy(error: BaseException) -> bool:
    """Whether `error` means the database is overloaded, locked or out of reach right now (the
    same work may succeed later), as opposed to a fault in the request or the code."""
    if isinstance(error, sa_exc.TimeoutError):
        return True  # no pooled connection came free in time
    if is_unreachable(error):
        return True
    if not isinstance(error, sa_exc.DBAPIError):
        return False
    cause = error.orig
    sqlite_code = getattr(cause, "sqlite_errorcode", None)
    if isinstance(sqlite_code, int):
        # Extended codes carry the primary code in their low byte (SQLITE_BUSY_SNAPSHOT, …).
        return sqlite_code & 0xFF in _SQLITE_BUSY_CODES
    if getattr(cause, "sqlstate", None) in _PG_BUSY_STATES:
        return True
    # A raised sqlite3 error built without a code (or an older driver): its words.
    text = str(cause).lower()
    return isinstance(error, sa_exc.OperationalError) and (
        "database is locked" in text or "database is busy" in text or "table is locked" in text
    )


def is_unreachable(error: BaseException) -> bool:
    """Whether `error` means the connection to the database was lost or refused (a server
    restarting, a network blip): a short outage, not a fault in the request or the code."""
    if isinstance(error, sa_exc.DisconnectionError):
        return True
    if not isinstance(error, sa_exc.DBAPIError):
        return False
    if error.connection_invalidated:
        return True  # SQLAlchemy's dialect recognised a dropped connection
    if not hasattr(error.orig, "sqlstate"):
        return False  # not a PostgreSQL driver's error (SQLite has no connection to lose)
    state: str | None = getattr(error.orig, "sqlstate", None)
    if state is None:
        # psycopg gives no SQLSTATE when the client itself failed: the connection was refused
        # or the server's FATAL came before a session existed ("not accepting connections").
        return isinstance(error, sa_exc.OperationalError)
    return state.startswith("08") or state in _PG_GONE_STATES


@contextmanager
def connection_apart(engine: Engine) -> Iterator[Connection]:
    """A pooled connection of its own (not a session's), in a transaction that takes no write
    lock and ends on exit: for reading in another thread while a session works in this one."""
    with (
        engine.execution_options(**{IMMEDIATE: False}).connect() as connection,
        connection.begin(),
    ):
        yield connection
