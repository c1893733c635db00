"""Migrations build exactly the schema the tables describe, and upgrading twice is harmless."""

from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

from benchgen.db import migrate
from benchgen.db.session import Database
from benchgen.db.tables import Base
from benchgen.services.runtime import Runtime

pytestmark = pytest.mark.both_backends  # migrations, on each backend


def test_migrated_schema_matches_the_tables(runtime: Runtime) -> None:
    with runtime.database.engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), Base.metadata)
    assert diff == []


def test_upgrade_is_idempotent(runtime: Runtime) -> None:
    assert migrate.is_current(runtime.database)
    migrate.upgrade(runtime.database)
    assert migrate.is_current(runtime.database)


def test_the_head_read_from_file_names_is_alembics() -> None:
    scripts = ScriptDirectory.from_config(migrate.alembic_config())
    assert migrate.head_revision() == scripts.get_current_head()
    for script in scripts.walk_revisions():
        assert script.path is not None
        assert Path(script.path).name.startswith(f"{script.revision}_"), script.path


def test_a_new_database_is_not_current_until_upgraded(tmp_path: Path) -> None:
    database = Database(f"sqlite:///{tmp_path / 'new.db'}")
    try:
        assert not migrate.is_current(database)
        migrate.upgrade(database)
        assert migrate.is_current(database)
    finally:
        database.dispose()
