"""Overload is an answer: a busy database is 503 + Retry-After, anything unexpected a 500
envelope; no route ever answers plain text."""

from __future__ import annotations

import json
import sqlite3
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import psycopg.errors
import pytest
from fastapi.testclient import TestClient
from httpx import Response
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import make_url

from benchgen.app import create_app
from benchgen.core.clock import ManualClock
from benchgen.core.config import Settings
from benchgen.core.context import Principal
from benchgen.core.permissions import Scope
from benchgen.db.session import Database
from benchgen.services.accounts import tokens
from benchgen.services.benchmarks import lifecycle
from benchgen.services.runtime import Runtime
from tests.support import MCQ, QA, World

ALL_SCOPES = sorted(scope.value for scope in Scope)


@pytest.fixture
def backend() -> str:
    """SQLite only: its file lock is what bursts hit; the mapping is the same on both."""
    return "sqlite"


@pytest.fixture
def impatient(settings: Settings, clock: ManualClock) -> Iterator[Runtime]:
    """A runtime that waits only 50 ms for SQLite's write lock."""
    quick = settings.model_copy(
        update={
            "sqlite_busy_timeout_ms": 50,
            "create_limit_per_minute": 1000,
            "create_limit_per_day": 1000,
            "model_host_allowlist": "127.0.0.1",
        }
    )
    runtime = Runtime(
        quick, Database(quick.resolved_database_url(), quick.sqlite_busy_timeout_ms), clock
    )
    yield runtime
    runtime.close()


def envelope_of(response: Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message", "details"}
    assert body["error"]["code"] == code
    error: dict[str, Any] = body["error"]
    return error


def wrapped(orig: Exception) -> sa_exc.OperationalError:
    """A driver error the way SQLAlchemy hands it on."""
    return sa_exc.OperationalError("BEGIN IMMEDIATE", {}, orig)


BUSY: dict[str, Callable[[], Exception]] = {
    "sqlite locked": lambda: wrapped(sqlite3.OperationalError("database is locked")),
    "sqlite busy": lambda: wrapped(sqlite3.OperationalError("database is busy")),
    "pool timeout": lambda: sa_exc.TimeoutError("QueuePool limit of size 5 overflow 10 reached"),
    "pg serialization": lambda: wrapped(psycopg.errors.SerializationFailure("could not serialize")),
    "pg deadlock": lambda: wrapped(psycopg.errors.DeadlockDetected("deadlock detected")),
    "pg lock timeout": lambda: wrapped(psycopg.errors.LockNotAvailable("lock timeout")),
    "pg connections": lambda: wrapped(psycopg.errors.TooManyConnections("too many clients")),
    # The database away for a moment (a restart): nothing was changed either.
    "pg refused": lambda: wrapped(psycopg.OperationalError("connection failed: refused")),
    "pg admin shutdown": lambda: wrapped(psycopg.errors.AdminShutdown("terminating connection")),
    "pg connection lost": lambda: wrapped(psycopg.errors.ConnectionFailure("server closed")),
    "connection invalidated": lambda: sa_exc.OperationalError(
        "SELECT 1", {}, Exception("gone"), connection_invalidated=True
    ),
}


@pytest.mark.parametrize("make", BUSY.values(), ids=BUSY.keys())
def test_a_busy_database_is_503_with_retry_after(
    runtime: Runtime, world: World, monkeypatch: pytest.MonkeyPatch, make: Callable[[], Exception]
) -> None:
    secret = world.token(world.user("ana@example.com"), ["read"])

    def busy(*_: Any, **__: Any) -> Any:
        raise make()

    monkeypatch.setattr(lifecycle, "list_benchmarks", busy)
    with TestClient(create_app(runtime.settings, runtime)) as client:
        response = client.get("/api/v1/benchmarks", headers={"Authorization": f"Bearer {secret}"})
    error = envelope_of(response, 503, "unavailable")
    assert response.headers["Retry-After"] == "1"
    assert error["details"] == {"retry_after": 1}
    assert "locked" not in error["message"] and "Pool" not in error["message"]


@pytest.mark.parametrize(
    "make",
    [
        lambda: RuntimeError("secret detail /srv/benchgen/keys"),
        lambda: wrapped(sqlite3.OperationalError("no such table: secret_detail")),
    ],
    ids=["runtime error", "non-busy database error"],
)
def test_unexpected_errors_are_a_500_envelope_without_their_text(
    runtime: Runtime, world: World, monkeypatch: pytest.MonkeyPatch, make: Callable[[], Exception]
) -> None:
    secret = world.token(world.user("ana@example.com"), ["read"])

    def broken(*_: Any, **__: Any) -> Any:
        raise make()

    monkeypatch.setattr(lifecycle, "list_benchmarks", broken)
    app = create_app(runtime.settings, runtime)
    # The framework re-raises after answering (so servers log it); the test reads the answer.
    with TestClient(app, raise_server_exceptions=False) as client:
        response = client.get("/api/v1/benchmarks", headers={"Authorization": f"Bearer {secret}"})
    envelope_of(response, 500, "internal")
    assert "secret" not in response.text
    assert "Retry-After" not in response.headers


def test_a_write_lock_held_elsewhere_is_503_then_clears(impatient: Runtime) -> None:
    world = World(impatient)
    auth = {"Authorization": f"Bearer {world.token(world.user('ana@example.com'), ALL_SCOPES)}"}
    path = make_url(impatient.settings.resolved_database_url()).database
    assert path
    holder = sqlite3.connect(path, isolation_level=None)
    with TestClient(create_app(impatient.settings, impatient)) as client:
        holder.execute("BEGIN IMMEDIATE")  # another process writing, for longer than we wait
        try:
            locked = client.post("/api/v1/benchmarks", json=QA, headers=auth)
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        envelope_of(locked, 503, "unavailable")
        assert locked.headers["Retry-After"] == "1"
        retried = client.post("/api/v1/benchmarks", json=QA, headers=auth)
        assert retried.status_code == 201, retried.text


def test_fifty_concurrent_writes_all_answer_json(impatient: Runtime) -> None:
    world = World(impatient)
    ana = world.user("ana@example.com", credits_=10_000)
    auth = {"Authorization": f"Bearer {world.token(ana, ALL_SCOPES)}"}
    seeded = [world.benchmark(ana, MCQ) for _ in range(3)]
    with TestClient(create_app(impatient.settings, impatient)) as client:
        requests = _mixed_writes(client, auth, seeded)
        responses = _all_at_once(requests)
    assert len(responses) == 50
    for response in responses:
        assert response.headers["content-type"] == "application/json", response.text
        json.loads(response.text)
        if response.status_code == 503:
            envelope_of(response, 503, "unavailable")
            assert int(response.headers["Retry-After"]) >= 1
        else:
            assert response.status_code < 500, response.text
    # Printed with -s: how often the lock was met on this machine.
    print(Counter(response.status_code for response in responses))


def _mixed_writes(
    client: TestClient, auth: dict[str, str], seeded: list[str]
) -> list[Callable[[], Response]]:
    imported = {"title": "Imported", "format": "qa", "content": '{"prompt": "1+1?", "answer": "2"}'}
    model = {"name": "Mine", "endpoint_model": "m", "base_url": "http://127.0.0.1:9/v1"}
    kinds: list[Callable[[int], Response]] = [
        lambda i: client.post("/api/v1/benchmarks", json={**QA, "title": f"B{i}"}, headers=auth),
        lambda i: client.post("/api/v1/benchmarks/import", json=imported, headers=auth),
        lambda i: client.patch(
            f"/api/v1/benchmarks/{seeded[i % 3]}", json={"title": f"T{i}"}, headers=auth
        ),
        lambda i: client.post(f"/api/v1/benchmarks/{seeded[i % 3]}/publish", headers=auth),
        lambda i: client.post("/api/v1/models", json={**model, "name": f"M{i}"}, headers=auth),
        lambda i: client.post(
            "/api/v1/runs",
            json={"benchmark_id": seeded[i % 3], "model_id": "mdl_builtin_first"},
            headers=auth,
        ),
    ]
    return [lambda i=i: kinds[i % len(kinds)](i) for i in range(50)]


def _all_at_once(requests: list[Callable[[], Response]]) -> list[Response]:
    barrier = threading.Barrier(len(requests))
    responses: list[Response] = []
    lock = threading.Lock()

    def one(request: Callable[[], Response]) -> None:
        barrier.wait()
        response = request()
        with lock:
            responses.append(response)

    threads = [threading.Thread(target=one, args=(request,)) for request in requests]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    return responses


def test_reads_never_wait_for_the_write_lock_and_revocation_is_immediate(
    impatient: Runtime, clock: ManualClock
) -> None:
    world = World(impatient)
    ana = world.user("ana@example.com")
    secret = world.token(ana, ALL_SCOPES)
    auth = {"Authorization": f"Bearer {secret}"}
    path = make_url(impatient.settings.resolved_database_url()).database
    assert path
    with TestClient(create_app(impatient.settings, impatient)) as client:
        assert client.get("/api/v1/benchmarks", headers=auth).status_code == 200  # stamps use
        holder = sqlite3.connect(path, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")  # a writer holds the lock for longer than we wait
        try:
            for _ in range(3):  # within the minute: authentication only reads
                assert client.get("/api/v1/benchmarks", headers=auth).status_code == 200
            clock.advance(minutes=1)  # the stamp is due: that one small write must wait
            envelope_of(client.get("/api/v1/benchmarks", headers=auth), 503, "unavailable")
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        web = Principal.web(ana)
        [token] = world.do(web, tokens.list_tokens)
        world.do(web, tokens.revoke_token, token.id)
        refused = client.get("/api/v1/benchmarks", headers=auth)
        assert refused.status_code == 401
