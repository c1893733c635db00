"""A request's unit of work commits before its response leaves: a client that acts on an answer
must find what that answer reported, and a failed commit must never be reported as a success."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import event
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from benchgen.app import create_app
from benchgen.services.runtime import Runtime
from tests.support import QA, World

pytestmark = pytest.mark.both_backends  # commit timing and failed commits

ALL_SCOPES = ["read", "runs", "create", "edit", "publish"]


class Recorder:
    """Notes, in order, when the database commits and when a response starts on the wire."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.events: list[str] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def noting(message: Message) -> None:
            if message["type"] == "http.response.start":
                self.events.append("response")
            await send(message)

        await self.app(scope, receive, noting)


@pytest.fixture
def recorder(runtime: Runtime) -> Iterator[Recorder]:
    """The app wrapped in a recorder, with every commit on its engine noted."""
    recorder = Recorder(create_app(runtime.settings, runtime))

    def committed(_conn: Any) -> None:
        recorder.events.append("commit")

    # Engine events also reach the write sessions' option view of the same engine.
    event.listen(runtime.database.engine, "commit", committed)
    yield recorder
    event.remove(runtime.database.engine, "commit", committed)


# A write: authentication's read, the token's first last-used stamp, the request's own commit.
# A read authenticates inside its own transaction, then stamps once it has ended.
WRITE_COMMITS = ["commit", "commit", "commit"]
READ_COMMITS = ["commit", "commit"]


@pytest.mark.parametrize(
    ("method", "path", "body", "commits"),
    [
        ("POST", "/api/v1/chat/conversations", {"title": "Sums"}, WRITE_COMMITS),
        ("POST", "/api/v1/benchmarks", QA, WRITE_COMMITS),
        ("GET", "/api/v1/benchmarks", None, READ_COMMITS),
    ],
)
def test_the_unit_of_work_commits_before_the_response_starts(
    recorder: Recorder,
    world: World,
    method: str,
    path: str,
    body: dict[str, Any] | None,
    commits: list[str],
) -> None:
    secret = world.token(world.user("ana@example.com"), ALL_SCOPES)
    with TestClient(recorder) as client:
        recorder.events.clear()
        response = client.request(
            method, path, json=body, headers={"Authorization": f"Bearer {secret}"}
        )
    assert response.is_success, response.text
    # Every commit, the stamp's included, and only then the answer.
    assert recorder.events == [*commits, "response"]


def test_a_failed_commit_is_an_error_not_a_success(runtime: Runtime, world: World) -> None:
    secret = world.token(world.user("ana@example.com"), ALL_SCOPES)
    engine = runtime.database.engine

    def note_insert(conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        if statement.lstrip().upper().startswith("INSERT INTO CONVERSATIONS"):
            conn.info["creates_conversation"] = True

    def fail_commit(conn: Any) -> None:
        if conn.info.pop("creates_conversation", False):
            raise RuntimeError("the disk is full")

    event.listen(engine, "before_cursor_execute", note_insert)
    event.listen(engine, "commit", fail_commit)
    try:
        app = create_app(runtime.settings, runtime)
        with TestClient(app, raise_server_exceptions=False) as client:
            auth = {"Authorization": f"Bearer {secret}"}
            response = client.post("/api/v1/chat/conversations", json={}, headers=auth)
            listed = client.get("/api/v1/chat/conversations", headers=auth).json()
    finally:
        event.remove(engine, "commit", fail_commit)
        event.remove(engine, "before_cursor_execute", note_insert)
    assert response.status_code == 500, response.text
    assert response.json()["error"]["code"]
    assert listed["items"] == []
