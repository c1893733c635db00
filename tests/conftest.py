"""Fixtures: a fresh, migrated database per test.

Which database a test gets (the `backend` fixture) is decided per test at collection:

- by default a database test runs once, on SQLite; a test marked `both_backends` (the SQL it
  exercises behaves differently on PostgreSQL: locking, concurrency, transactions, migrations,
  case and ordering, round-trips, visibility filters, paging) runs on SQLite and PostgreSQL;
- `BENCHGEN_TEST_BACKENDS=postgres` runs every database test on PostgreSQL only (`make
  test-postgres`), `=sqlite,postgres` every one on both, `=sqlite` every one on SQLite only;
- a test that pins its backend (`@pytest.mark.parametrize("backend", ["sqlite"])`, or a module or
  class with its own `backend` fixture) keeps it whatever the choice.

PostgreSQL is one migrated database per session; each test starts from its state after the
migrations (every table emptied with DELETE, then the seeded rows put back). When PostgreSQL does
not answer its tests skip, except under `CI=true`, where that is a failure.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from sqlalchemy import Engine, create_engine

from benchgen.core.clock import ManualClock
from benchgen.core.config import Settings
from benchgen.db import migrate
from benchgen.db.session import Database
from benchgen.evals import engine
from benchgen.services.runtime import Runtime
from tests.compile_once import share_compiled_routes, share_compiled_sql, share_compiled_templates
from tests.smtp_stub import SmtpStub
from tests.snapshots import TableRows
from tests.support import LOCAL_THREADS, World

PG_ADMIN_URL = os.environ.get("BENCHGEN_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres")
IN_CI = os.environ.get("CI", "").lower() == "true"
BACKENDS = ("sqlite", "postgres")
BOTH_BACKENDS = "both_backends"


def _chosen_backends() -> tuple[list[str], list[str]] | None:
    """(backends of `both_backends` tests, backends of the others) from BENCHGEN_TEST_BACKENDS;
    None when it names something else."""
    raw = os.environ.get("BENCHGEN_TEST_BACKENDS", "").strip()
    if not raw:
        return list(BACKENDS), ["sqlite"]
    chosen = [name.strip() for name in raw.split(",") if name.strip()]
    if not chosen or any(name not in BACKENDS for name in chosen):
        return None
    ordered = [name for name in BACKENDS if name in chosen]
    return ordered, ordered


def pytest_configure(config: pytest.Config) -> None:
    if _chosen_backends() is None:
        raise pytest.UsageError(
            "BENCHGEN_TEST_BACKENDS must be a comma-separated list of "
            f"{', '.join(BACKENDS)} (got {os.environ['BENCHGEN_TEST_BACKENDS']!r})"
        )
    if os.environ.get("PYTEST_XDIST_WORKER"):
        # xdist's workers start with COLUMNS=80 and LINES=24: a Rich console made under them
        # keeps 80 columns for the whole worker, where one test process sees neither.
        for name in ("COLUMNS", "LINES"):
            os.environ.pop(name, None)
    # Every test builds its own engine, every app test its own app: each compiled the same SQL,
    # routes and templates again (tests/compile_once.py).
    share_compiled_sql()
    share_compiled_routes()
    share_compiled_templates()
    # The same for torch in the test processes themselves (it reads this when it starts);
    # training children and local models set their own threads.
    os.environ.setdefault("OMP_NUM_THREADS", str(LOCAL_THREADS))


def pytest_report_header(config: pytest.Config) -> str:
    marked, others = _chosen_backends() or ([], [])
    return f"database backends: {BOTH_BACKENDS} tests {'+'.join(marked)}, others {'+'.join(others)}"


def _pins_backend(metafunc: pytest.Metafunc) -> bool:
    """Whether the test chose its backend itself (parametrize, or its own `backend` fixture)."""
    for marker in metafunc.definition.iter_markers("parametrize"):
        names = marker.args[0] if marker.args else marker.kwargs.get("argnames", "")
        if isinstance(names, str):
            names = [name.strip() for name in names.split(",")]
        if "backend" in names:
            return True
    return any(
        owner is not None and getattr(owner, "backend", None) is not None
        for owner in (metafunc.module, metafunc.cls)
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Run each database test on the backends its marker and BENCHGEN_TEST_BACKENDS call for."""
    if "backend" not in metafunc.fixturenames or _pins_backend(metafunc):
        return
    marked, others = _chosen_backends() or ([], [])
    both = metafunc.definition.get_closest_marker(BOTH_BACKENDS) is not None
    metafunc.parametrize("backend", marked if both else others)


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


class PgReset:
    """Puts the session's PostgreSQL database back as the migrations left it, on one engine.

    DELETE in reverse dependency order, then the seeded rows (e.g. built-in models) again, in
    one transaction: on tables of a few rows that is some milliseconds, where TRUNCATE of every
    table (new files for each) took ~150 ms a test. Sequences move on, as with TRUNCATE before.
    """

    def __init__(self, url: str) -> None:
        self.engine: Engine = create_engine(url)
        self.seeds = TableRows.capture(self.engine)

    def __call__(self) -> None:
        self.seeds.restore(self.engine)

    def dispose(self) -> None:
        self.engine.dispose()


@pytest.fixture(scope="session")
def pg_database() -> Iterator[tuple[str, PgReset]]:
    """A fresh, migrated PostgreSQL database for this test session, and its reset."""
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
    reset = PgReset(url)
    yield url, reset
    reset.dispose()
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def backend() -> str:
    """Which database a test runs on; set per test by `pytest_generate_tests` above."""
    return "sqlite"


@pytest.fixture(scope="session")
def base_settings() -> Settings:
    """What every test's settings share: cheap password hashing, no embedded workers, one
    thread for local models (and the environment's BENCHGEN_* variables, read once)."""
    return Settings(
        argon2_time_cost=1,
        argon2_memory_kib=64,
        worker_threads=0,
        local_model_threads=LOCAL_THREADS,
    )


@pytest.fixture
def settings(
    backend: str, tmp_path: Path, base_settings: Settings, request: pytest.FixtureRequest
) -> Settings:
    """Test settings: a private data dir, cheap password hashing, the chosen database."""
    if backend == "sqlite":
        target = tmp_path / "data" / "benchgen.db"
        target.parent.mkdir()
        shutil.copy(request.getfixturevalue("sqlite_template"), target)
        url = f"sqlite:///{target}"
    else:
        url, reset = request.getfixturevalue("pg_database")
        reset()
    # A copy, not settings built afresh (environment and checks again: ~2 ms a test); both
    # values are as the checks would leave them.
    return base_settings.model_copy(update={"data_dir": tmp_path / "data", "database_url": url})


@pytest.fixture
def clock() -> ManualClock:
    """A clock the test moves by hand."""
    return ManualClock()


@pytest.fixture
def quick_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs wait about 10 ms before asking a failed question again, not the engine's 0.5 s
    doubling (3.5-5 s a question, slept for real): the attempts and what they record are the
    same. tests/evals/test_engine.py checks the backoff itself."""
    defaults = engine.run_items.__kwdefaults__
    monkeypatch.setitem(defaults, "backoff_s", 0.01)
    monkeypatch.setitem(defaults, "max_backoff_s", 0.05)


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


@pytest.fixture
def gpu_locks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private folder for the machine-wide GPU locks (services/training/devices.py): faked
    GPUs of tests running side by side must not look held by one another."""
    from benchgen.services.training import devices

    folder = tmp_path / "gpu-locks"
    monkeypatch.setattr(devices, "MACHINE_LOCKS", folder)
    return folder


@pytest.fixture
def smtp_stub(runtime: Runtime, monkeypatch: pytest.MonkeyPatch) -> Iterator[SmtpStub]:
    """A local SMTP server (tests/smtp_stub.py) that the test's runtime sends its mail to."""
    server = SmtpStub()
    monkeypatch.setattr(runtime.settings, "smtp_url", server.url)
    yield server
    server.close()
