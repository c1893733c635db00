"""Alembic environment: migrates the connection handed in by `benchgen.db.migrate`, or the URL."""

from __future__ import annotations

import hashlib

from alembic import context
from sqlalchemy import Connection, create_engine, text

from benchgen.core.errors import Conflict
from benchgen.db.session import IMMEDIATE
from benchgen.db.tables import Base

config = context.config
target_metadata = Base.metadata
# Every process migrates when it finds the database behind (a team's machines starting after
# an upgrade): one at a time, each later one finding the work done.
_MIGRATING = int.from_bytes(
    hashlib.blake2b(b"benchgen migrations", digest_size=8).digest(), "big", signed=True
)


def run_migrations() -> None:
    """Run against a given connection (the app's) or a URL from alembic.ini / -x url=…."""
    connection = config.attributes.get("connection")
    if connection is not None:
        _migrate(connection, ours=True)
        return
    url = context.get_x_argument(as_dictionary=True).get("url") or config.get_main_option(
        "sqlalchemy.url"
    )
    engine = create_engine(str(url))
    with engine.connect() as conn:
        _migrate(conn, ours=False)


def _migrate(connection: Connection, ours: bool) -> None:
    """`ours`: the connection is the app's, whose engine writes BEGIN itself (session.py)."""
    if connection.dialect.name == "sqlite":
        _migrate_sqlite(connection, ours)
    else:
        _run(connection, one_transaction=True)


def _migrate_sqlite(connection: Connection, ours: bool) -> None:
    """Migrate with foreign keys unenforced (on the app's engine, checked before the
    migrations commit), then enforce them again.

    SQLite alters a table by copying it and dropping the old one, and with foreign keys on the
    DROP first deletes its rows and their ON DELETE CASCADE children: upgrading a database from
    revision 0007 emptied every run's answers, logs and leaderboard entries. The pragma is
    ignored inside a transaction, and the caller's connection is in one (it has written
    nothing), so the migrations take a connection of their own. On the app's engine they run
    in one transaction that takes the write lock at BEGIN (Alembic would commit each revision
    alone, as pysqlite's own transactions require): another process migrating at once waits for
    all of them, instead of failing "locked" or meeting a half-upgraded schema.
    """
    with connection.engine.connect() as own:
        own.execution_options(**{IMMEDIATE: True})
        raw = own.connection.driver_connection
        assert raw is not None
        raw.execute("PRAGMA foreign_keys=OFF")
        try:
            _run(own, one_transaction=ours)
        finally:
            raw.execute("PRAGMA foreign_keys=ON")


def _run(connection: Connection, one_transaction: bool) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=True,  # SQLite can only ALTER through table copies
        compare_type=True,
        transactional_ddl=one_transaction,
    )
    with context.begin_transaction():
        if connection.dialect.name == "postgresql":
            # Held until this transaction ends; the revision is read after it is taken.
            connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _MIGRATING})
        _refuse_a_newer_schema()
        context.run_migrations()
        if one_transaction and connection.dialect.name == "sqlite":
            _refuse_broken_references(connection)


def _refuse_broken_references(connection: Connection) -> None:
    """Foreign keys were not enforced while migrating: a row left pointing nowhere undoes the
    whole upgrade (this transaction), and the database stays as it was."""
    broken = connection.exec_driver_sql("PRAGMA foreign_key_check").all()
    if broken:
        table, rowid, parent, _ = broken[0]
        raise Conflict(
            f"migrating would leave {len(broken)} rows pointing at rows that do not exist "
            f"(first: {table} row {rowid} names a missing {parent} row); nothing was changed."
        )


def _refuse_a_newer_schema() -> None:
    """A database a newer BenchGen upgraded is refused in a sentence (it was a traceback on
    every command, `serve` included, of a machine left on the old version)."""
    script = context.script
    known = {revision.revision for revision in script.walk_revisions()}
    unknown = [rev for rev in context.get_context().get_current_heads() if rev not in known]
    if unknown:
        raise Conflict(
            f"the database's schema is at revision {unknown[0]}, newer than this BenchGen's "
            f"newest ({script.get_current_head()}): a newer BenchGen upgraded it. Install that "
            "version here; BenchGen never downgrades a database."
        )


run_migrations()
