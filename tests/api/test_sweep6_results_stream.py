"""A run's download through the API and the web app is streamed: the server never holds the
whole file (it built it as one string, then one body of bytes: several times the file), keeps
the headers it had, and a client that leaves mid-download frees the read at once."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass, field
from typing import Any

import anyio
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import insert

from benchgen.core.context import Principal
from benchgen.db.tables import RunResult
from benchgen.services.runs import launch, results
from benchgen.services.runtime import Runtime
from benchgen.web.session import SESSION_COOKIE
from tests.support import OPERATOR, QA, World
from tests.web.support import WebUser

ECHO = "mdl_builtin_echo"
REPLY = 'a"b,\n=c é ' * 2_000  # 20,000 characters, escaped in JSONL and CSV alike
ANSWERS = 400  # about 8 MB of JSONL


@dataclass
class Download:
    """What the server sent to a client that keeps nothing of the body."""

    status: int = 0
    headers: dict[str, str] = field(default_factory=dict)
    sizes: list[int] = field(default_factory=list)


def _large_run(world: World, user: str) -> str:
    run_id = world.do(Principal.web(user), launch.start_run, world.benchmark(user, QA), ECHO).id
    rows = [
        {"run_id": run_id, "position": p, "prompt_sent": "q", "raw": REPLY, "outcome": "wrong"}
        for p in range(ANSWERS)
    ]
    world.ctx_call(OPERATOR, lambda ctx: ctx.session.execute(insert(RunResult), rows))
    return run_id


def _get(
    client: TestClient, url: str, headers: dict[str, str], leave_after: int | None = None
) -> Download:
    """GET `url` straight through the app, as a server would, counting what is sent and keeping
    none of it (the test client collects the whole body, which would be measured too). With
    `leave_after`, the client goes away once that many pieces have come."""
    path, _, query = url.partition("?")
    scope = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},  # as uvicorn
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": query.encode(),
        "root_path": "",
        "headers": [(b"host", b"testserver")]
        + [(k.lower().encode(), v.encode()) for k, v in headers.items()],
        "client": ("127.0.0.1", 50000),
        "server": ("testserver", 80),
    }
    got = Download()
    asked = False

    async def receive() -> dict[str, Any]:
        nonlocal asked
        if not asked:
            asked = True
            return {"type": "http.request", "body": b"", "more_body": False}
        while leave_after is None or len(got.sizes) < leave_after:
            await anyio.sleep(0.01)
        return {"type": "http.disconnect"}

    async def send(message: MutableMapping[str, Any]) -> None:
        if message["type"] == "http.response.start":
            got.status = message["status"]
            got.headers = {k.decode(): v.decode() for k, v in message["headers"]}
        elif message["type"] == "http.response.body" and message.get("body"):
            got.sizes.append(len(message["body"]))

    async def serve() -> None:
        await client.app(scope, receive, send)

    assert client.portal is not None
    client.portal.call(serve)
    return got


def _peak(fetch: Callable[[], Download]) -> tuple[Download, int]:
    fetch()  # once before: SQL, routes and templates compiled, caches filled
    tracemalloc.start()
    try:
        got = fetch()
        return got, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _door(client: TestClient, world: World, user: str, door: str) -> dict[str, str]:
    if door == "api":
        return {"Authorization": f"Bearer {world.token(user, ['read'])}"}
    client.follow_redirects = False  # as a browser's sign-in sees it
    WebUser.sign_in(client, "ana@example.com")
    return {"Cookie": f"{SESSION_COOKIE}={client.cookies[SESSION_COOKIE]}"}


@pytest.mark.parametrize("door", ["api", "web"])
@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_a_large_download_is_sent_in_pieces_never_held_whole(
    client: TestClient, world: World, monkeypatch: pytest.MonkeyPatch, door: str, fmt: str
) -> None:
    ana = world.user("ana@example.com")
    run_id = _large_run(world, ana)
    monkeypatch.setattr(results, "EXPORT_CHARS", 50_000)
    auth = _door(client, world, ana, door)
    url = (
        f"/api/v1/runs/{run_id}/export?format={fmt}"
        if door == "api"
        else f"/runs/{run_id}/download/{fmt}"
    )
    got, peak = _peak(lambda: _get(client, url, auth))
    size = sum(got.sizes)
    assert got.status == 200 and size > ANSWERS * len(REPLY)
    # Built whole, the text and its bytes were held at once: more than twice the file.
    assert peak < size / 5, (peak, size)
    assert len(got.sizes) > 80  # pieces of about 50,000 characters, not one body
    assert got.headers["content-disposition"] == f'attachment; filename="{run_id}.{fmt}"'
    assert got.headers["cache-control"] == "no-store"
    assert got.headers["x-content-type-options"] == "nosniff"
    media = {"jsonl": "application/x-ndjson", "csv": "text/csv; charset=utf-8"}[fmt]
    assert got.headers["content-type"] == media


def test_a_client_gone_mid_download_gives_its_connection_back_at_once(
    client: TestClient, world: World, runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    ana = world.user("ana@example.com")
    run_id = _large_run(world, ana)
    monkeypatch.setattr(results, "EXPORT_CHARS", 100_000)
    auth = _door(client, world, ana, "api")
    got = _get(client, f"/api/v1/runs/{run_id}/export", auth, leave_after=2)
    assert 2 <= len(got.sizes) < 20
    # The download's read transaction ended with the response, not whenever the garbage
    # collector found the abandoned stream: on PostgreSQL its connection and snapshot, on
    # SQLite a reader that keeps the log from being checkpointed, held meanwhile.
    assert runtime.database.engine.pool.checkedout() == 0
