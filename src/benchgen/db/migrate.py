"""Create or upgrade a database to the newest schema with Alembic (every command calls this)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import exc as sa_exc

from benchgen.db.session import Database

if TYPE_CHECKING:
    from alembic.config import Config

MIGRATIONS = Path(__file__).parent / "migrations"


def alembic_config() -> Config:
    """An Alembic config pointing at the packaged migrations."""
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    return config


def head_revision() -> str:
    """The newest revision, read from the migration files' names (`0007_web_app.py` is revision
    0007; tests/test_migrations.py holds every file to that and agrees with Alembic)."""
    names = sorted(path.name for path in (MIGRATIONS / "versions").glob("[0-9]*_*.py"))
    return names[-1].split("_", 1)[0]


def is_current(database: Database) -> bool:
    """True when the database is already at the newest revision."""
    # One query and no Alembic: loading it and its scripts took a tenth of a second of every
    # command's start, for a database that is almost always current already.
    with database.engine.connect() as conn:
        try:
            current = conn.exec_driver_sql("SELECT version_num FROM alembic_version").all()
        except sa_exc.DBAPIError:
            return False  # a new database: no version table yet
    return [row[0] for row in current] == [head_revision()]


def upgrade(database: Database) -> None:
    """Bring the schema to the newest revision; a no-op when it already is."""
    if is_current(database):
        return
    from alembic import command

    config = alembic_config()
    with database.engine.begin() as conn:
        config.attributes["connection"] = conn
        command.upgrade(config, "head")
