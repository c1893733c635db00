"""Migrations build exactly the schema the tables describe, and upgrading twice is harmless."""

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from benchgen.db import migrate
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
