"""Fixtures: a fresh, migrated database per test on SQLite and (when it answers) PostgreSQL."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from sqlalchemy import create_engine

from benchgen.core.clock import ManualClock
from benchgen.core.config import Settings
from benchgen.db import migrate
from benchgen.db.session import Database
from benchgen.db.tables import Base
from benchgen.services.runtime import Runtime
from tests.support import World

PG_ADMIN_URL = os.environ.get("BENCHGEN_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres")
IN_CI = os.environ.get("CI", "").lower() == "true"


def _pg_available() -> str | None:
    try:
        with psycopg.connect(PG_ADMIN_URL, connect_timeout=3, autocommit=True):
            return None
    except psycopg.Error as exc:
        return f"PostgreSQL at {PG_ADMIN_URL} does not answer: {exc}".splitlines()[0]


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One migrated SQLite file; each test gets a copy (migrating per test would be slow)."""
    path = tmp_path_factory.mktemp("template") / "benchgen.db"
    database = Database(f"sqlite:///{path}")
    migrate.upgrade(database)
    database.dispose()
    return path


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    """A fresh, migrated PostgreSQL database for this test session."""
    reason = _pg_available()
    if reason:
        if IN_CI:
            pytest.fail(f"CI=true requires PostgreSQL: {reason}")
        pytest.skip(reason)
    name = f"benchgen_test_{os.getpid()}"
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    url = PG_ADMIN_URL.rsplit("/", 1)[0].replace("postgresql://", "postgresql+psycopg://")
    url = f"{url}/{name}"
    database = Database(url)
    migrate.upgrade(database)
    database.dispose()
    _SEEDS.update(_snapshot(url))
    yield url
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest) -> str:
    """Which database a test runs on; database tests run once per backend."""
    return str(request.param)


@pytest.fixture
def settings(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Settings:
    """Test settings: a private data dir, cheap password hashing, the chosen database."""
    if backend == "sqlite":
        target = tmp_path / "data" / "benchgen.db"
        target.parent.mkdir()
        shutil.copy(request.getfixturevalue("sqlite_template"), target)
        url = f"sqlite:///{target}"
    else:
        url = request.getfixturevalue("pg_url")
        _truncate(url)
    return Settings(
        data_dir=tmp_path / "data",
        database_url=url,
        argon2_time_cost=1,
        argon2_memory_kib=64,
        worker_threads=0,
    )


# Rows the migrations seed (e.g. built-in models), restored after each test's truncation.
_SEEDS: dict[str, list[dict[str, object]]] = {}


def _snapshot(url: str) -> dict[str, list[dict[str, object]]]:
    engine = create_engine(url)
    with engine.connect() as conn:
        seeds = {
            table.name: [dict(row._mapping) for row in conn.execute(table.select())]
            for table in Base.metadata.sorted_tables
        }
    engine.dispose()
    return {name: rows for name, rows in seeds.items() if rows}


def _truncate(url: str) -> None:
    names = ", ".join(f'"{table.name}"' for table in Base.metadata.sorted_tables)
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.exec_driver_sql(f"TRUNCATE {names} CASCADE")
        for table in Base.metadata.sorted_tables:
            if _SEEDS.get(table.name):
                conn.execute(table.insert(), _SEEDS[table.name])
    engine.dispose()


@pytest.fixture
def clock() -> ManualClock:
    """A clock the test moves by hand."""
    return ManualClock()


@pytest.fixture
def runtime(settings: Settings, clock: ManualClock) -> Iterator[Runtime]:
    """A runtime on the test's own database."""
    rt = Runtime(settings, Database(settings.resolved_database_url()), clock)
    yield rt
    rt.close()


@pytest.fixture
def world(runtime: Runtime) -> World:
    """Helpers to create users and act as them through every door."""
    return World(runtime)
