"""Upgrading a database made by an older revision keeps every row of its runs, and one a newer
BenchGen upgraded is refused in a sentence."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from alembic import command
from sqlalchemy import create_engine, func, make_url, select, table, text

from benchgen.core.context import Principal
from benchgen.core.errors import Conflict
from benchgen.db import migrate
from benchgen.db.session import Database
from benchgen.jobs.worker import Worker
from benchgen.services.runs import launch
from benchgen.services.runtime import Runtime
from tests.conftest import PG_ADMIN_URL
from tests.processes import BIN
from tests.support import MCQ, World


def _counts(database: Database) -> tuple[int, int, int]:
    with database.engine.connect() as conn:
        return tuple(  # type: ignore[return-value]
            conn.execute(select(func.count()).select_from(table(name))).scalar_one()
            for name in ("runs", "run_results", "run_log_lines")
        )


def _downgrade(url: str, revision: str) -> None:
    """As `alembic -x url=… downgrade` does: a plain engine, foreign keys not enforced."""
    engine = create_engine(url)
    try:
        with engine.begin() as conn:
            config = migrate.alembic_config()
            config.attributes["connection"] = conn
            command.downgrade(config, revision)
    finally:
        engine.dispose()


def test_upgrading_from_0007_keeps_the_runs_answers_and_logs(
    world: World, runtime: Runtime
) -> None:
    """Before, 0008 rebuilt `runs` with SQLite's foreign keys on, and dropping the old table
    cascaded: every run's answers and log lines were deleted by `benchgen db upgrade`."""
    ana = world.user("ana@example.com")
    benchmark = world.benchmark(ana, MCQ)
    world.do(Principal.web(ana), launch.start_run, benchmark, "mdl_builtin_first")
    while Worker(runtime).run_once():
        pass
    before = _counts(runtime.database)
    assert before[1] > 0 and before[2] > 0
    url = runtime.database.url
    runtime.close()
    _downgrade(url, "0007")
    database = Database(url)
    try:
        migrate.upgrade(database)
        assert migrate.is_current(database)
        assert _counts(database) == before
        with database.engine.connect() as conn:
            # The pooled connection the migration used enforces foreign keys again.
            assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar_one() == 1
    finally:
        database.dispose()


@pytest.mark.both_backends
def test_a_schema_newer_than_this_benchgen_is_refused_in_a_sentence(runtime: Runtime) -> None:
    """Before, a machine left on the old version met Alembic's "Can't locate revision" as a
    traceback, on every command."""
    with runtime.database.engine.begin() as conn:
        conn.exec_driver_sql("UPDATE alembic_version SET version_num = '0999'")
    try:
        with pytest.raises(Conflict, match=r"revision 0999, newer than .*never downgrades"):
            migrate.upgrade(runtime.database)
    finally:
        with runtime.database.engine.begin() as conn:
            conn.execute(
                text("UPDATE alembic_version SET version_num = :head"),
                {"head": migrate.head_revision()},
            )


@pytest.fixture(params=["sqlite", "postgres"])
def empty_database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """The URL of a database no migration has touched yet."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'fresh.db'}"
        return
    name = f"bg_sweep5_fresh_{os.getpid()}"
    try:
        admin = psycopg.connect(PG_ADMIN_URL, autocommit=True)
    except psycopg.OperationalError:
        pytest.skip("PostgreSQL does not answer")
    with admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}"')
        admin.execute(f'CREATE DATABASE "{name}"')
    yield str(make_url(PG_ADMIN_URL).set(drivername="postgresql+psycopg", database=name))
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_processes_starting_together_on_a_new_database_all_start(
    empty_database: str, tmp_path: Path
) -> None:
    """Every command migrates a database it finds behind; before, of three started at once
    (a team's machines after an upgrade) all but one failed, "database is locked" on SQLite
    and a duplicate key on PostgreSQL, both with "check BENCHGEN_DATABASE_URL"."""
    env = {
        **os.environ,
        "BENCHGEN_DATA_DIR": str(tmp_path / "data"),
        "BENCHGEN_DATABASE_URL": empty_database,
    }
    started = [
        subprocess.Popen(  # noqa: S603 - the project's own command
            [str(BIN), "db", "upgrade"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
        for _ in range(3)
    ]
    outputs = [process.communicate(timeout=120)[0].decode() for process in started]
    assert [process.returncode for process in started] == [0, 0, 0], outputs


def test_an_upgrade_that_would_leave_a_row_pointing_nowhere_changes_nothing(
    runtime: Runtime,
) -> None:
    """Foreign keys go unenforced while SQLite migrates: a dangling row found after the
    migrations undoes all of them (one transaction), rather than committing them one by one."""
    url = runtime.database.url
    runtime.close()
    _downgrade(url, "0007")
    engine = create_engine(url)  # foreign keys not enforced, as by a hand-made fix
    with engine.begin() as conn:
        conn.execute(
            text("INSERT INTO run_log_lines (run_id, at, line) VALUES ('run_gone', :at, 'x')"),
            {"at": "2026-01-01 00:00:00"},
        )
    engine.dispose()
    database = Database(url)
    try:
        with pytest.raises(Conflict, match="run_log_lines row 1 names a missing runs row"):
            migrate.upgrade(database)
        with database.engine.connect() as conn:
            assert conn.exec_driver_sql("SELECT version_num FROM alembic_version").all() == [
                ("0007",)
            ]
            columns = [row[1] for row in conn.exec_driver_sql("PRAGMA table_info(runs)")]
            assert "submission" not in columns  # 0008's column: its table copy was undone too
    finally:
        database.dispose()
