"""Create or upgrade a database to the newest schema with Alembic (every command calls this)."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

from benchgen.db.session import Database

MIGRATIONS = Path(__file__).parent / "migrations"


def alembic_config() -> Config:
    """An Alembic config pointing at the packaged migrations."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    return config


def is_current(database: Database) -> bool:
    """True when the database is already at the newest revision."""
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    with database.engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision() == head


def upgrade(database: Database) -> None:
    """Bring the schema to the newest revision; a no-op when it already is."""
    if is_current(database):
        return
    config = alembic_config()
    with database.engine.begin() as conn:
        config.attributes["connection"] = conn
        command.upgrade(config, "head")
