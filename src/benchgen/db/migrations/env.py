"""Alembic environment: migrates the connection handed in by `benchgen.db.migrate`, or the URL."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine

from benchgen.db.tables import Base

config = context.config
target_metadata = Base.metadata


def run_migrations() -> None:
    """Run against a given connection (the app's) or a URL from alembic.ini / -x url=…."""
    connection = config.attributes.get("connection")
    if connection is not None:
        _migrate(connection)
        return
    url = context.get_x_argument(as_dictionary=True).get("url") or config.get_main_option(
        "sqlalchemy.url"
    )
    engine = create_engine(str(url))
    with engine.connect() as conn:
        _migrate(conn)


def _migrate(connection: object) -> None:
    context.configure(
        connection=connection,  # type: ignore[arg-type]
        target_metadata=target_metadata,
        render_as_batch=True,  # SQLite can only ALTER through table copies
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


run_migrations()
