"""Request-body limits: 413 in the envelope, decided as bytes arrive, before parsing or auth."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from httpx import Response
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import Message, Receive, Scope, Send

from benchgen.api.limits import BodyLimit
from benchgen.app import create_app
from benchgen.core.config import Settings
from benchgen.services.runtime import Runtime
from tests.e2e.support import LiveServer
from tests.support import World

SMALL = 64 * 1024
IMPORT = 256 * 1024


@pytest.fixture
def client(runtime: Runtime) -> Iterator[TestClient]:
    """An app with small limits, so over-limit bodies stay cheap to build."""
    runtime.settings = runtime.settings.model_copy(
        update={"max_body_bytes": SMALL, "max_import_bytes": IMPORT}
    )
    with TestClient(create_app(runtime.settings, runtime)) as test_client:
        yield test_client


@pytest.fixture
def auth(world: World) -> dict[str, str]:
    secret = world.token(world.user("ana@example.com"), ["read", "create"])
    return {"Authorization": f"Bearer {secret}"}


def too_large(response: Response, limit: int) -> None:
    assert response.status_code == 413, response.text
    assert response.headers["content-type"] == "application/json"
    error = response.json()["error"]
    assert set(error) == {"code", "message", "details"}
    assert error["code"] == "too_large"
    assert error["details"] == {"limit_bytes": limit}


def chunks(data: bytes, size: int = 8192) -> Iterator[bytes]:
    """The body as a stream: httpx sends it chunked, with no Content-Length."""
    for start in range(0, len(data), size):
        yield data[start : start + size]


def big_benchmark(questions: int) -> dict[str, Any]:
    """A valid qa benchmark of roughly 120 bytes per question."""
    return {
        "title": "Big",
        "format": "qa",
        "questions": [
            {"prompt": f"Question {i}: " + "words " * 15, "answer": f"answer {i}"}
            for i in range(questions)
        ],
    }


def test_defaults_are_a_few_megabytes_and_more_for_imports() -> None:
    fields = Settings.model_fields
    assert fields["max_body_bytes"].default == 2 * 1024 * 1024
    assert fields["max_import_bytes"].default == 32 * 1024 * 1024


def test_declared_length_over_the_limit_is_refused_before_authentication(
    client: TestClient,
) -> None:
    # No token: were the body parsed or the token checked first, this would be 422 or 401.
    response = client.post(
        "/api/v1/benchmarks",
        content=b"{" + b" " * SMALL + b"}",
        headers={"Content-Type": "application/json"},
    )
    too_large(response, SMALL)


def test_a_chunked_body_is_counted_and_refused_before_authentication(client: TestClient) -> None:
    body = json.dumps(big_benchmark(1000)).encode()
    assert len(body) > SMALL
    response = client.post(
        "/api/v1/benchmarks", content=chunks(body), headers={"Content-Type": "application/json"}
    )
    assert "content-length" not in response.request.headers
    too_large(response, SMALL)


def test_an_oversized_benchmark_is_not_stored(
    client: TestClient, auth: dict[str, str], runtime: Runtime
) -> None:
    body = json.dumps(big_benchmark(1000)).encode()
    for content in (body, chunks(body)):
        response = client.post(
            "/api/v1/benchmarks",
            content=content,
            headers={**auth, "Content-Type": "application/json"},
        )
        too_large(response, SMALL)
    assert client.get("/api/v1/benchmarks", headers=auth).json()["items"] == []
    # The same body is a fine benchmark where the limit allows it: only size refused it.
    runtime.settings = runtime.settings.model_copy(update={"max_body_bytes": 2 * len(body)})
    with TestClient(create_app(runtime.settings, runtime)) as other:
        made = other.post(
            "/api/v1/benchmarks", content=body, headers={**auth, "Content-Type": "application/json"}
        )
    assert made.status_code == 201, made.text


def test_the_import_route_accepts_more(client: TestClient, auth: dict[str, str]) -> None:
    lines = [json.dumps(q) for q in big_benchmark(1000)["questions"]]
    body = {"title": "Imported", "format": "qa", "content": "\n".join(lines)}
    assert SMALL < len(json.dumps(body)) < IMPORT
    made = client.post("/api/v1/benchmarks/import", json=body, headers=auth)
    assert made.status_code == 201, made.text
    assert made.json()["benchmark"]["question_count"] == 1000
    # The same body anywhere else is over the default limit.
    too_large(client.post("/api/v1/benchmarks", json=body, headers=auth), SMALL)
    body["content"] = "\n".join(lines * 3)
    too_large(client.post("/api/v1/benchmarks/import", json=body, headers=auth), IMPORT)


# --- The middleware alone -----------------------------------------------------------------------


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def echo_length(scope: Scope, receive: Receive, send: Send) -> None:
    """An app that reads the whole body and says how long it was."""
    body = await Request(scope, receive).body()
    await JSONResponse({"length": len(body)})(scope, receive, send)


class Recorder:
    """A client sending `count` chunks of 1000 bytes, and what came back."""

    def __init__(self, count: int, headers: list[tuple[bytes, bytes]] | None = None) -> None:
        self.count = count
        self.pulled = 0
        self.sent: list[Message] = []
        self.scope: Scope = {
            "type": "http",
            "method": "POST",
            "path": "/api/v1/anything",
            "headers": headers or [],
        }

    async def receive(self) -> Message:
        self.pulled += 1
        more = self.pulled < self.count
        return {"type": "http.request", "body": b"x" * 1000, "more_body": more}

    async def send(self, message: Message) -> None:
        self.sent.append(message)

    @property
    def status(self) -> int:
        return int(self.sent[0]["status"])

    @property
    def body(self) -> Any:
        return json.loads(b"".join(m.get("body", b"") for m in self.sent[1:]))


@pytest.mark.anyio
async def test_the_middleware_stops_reading_at_the_first_chunk_over_the_limit() -> None:
    client = Recorder(count=100)
    await BodyLimit(echo_length, 2500, {})(client.scope, client.receive, client.send)
    assert client.status == 413
    assert client.body["error"]["code"] == "too_large"
    assert client.pulled == 3, "the rest of the body was never read"


@pytest.mark.anyio
async def test_the_middleware_refuses_a_declared_length_without_reading() -> None:
    client = Recorder(count=3, headers=[(b"content-length", b"3000")])
    await BodyLimit(echo_length, 2500, {})(client.scope, client.receive, client.send)
    assert (client.status, client.pulled) == (413, 0)


@pytest.mark.anyio
async def test_the_middleware_passes_bodies_within_the_limit_and_per_path_limits() -> None:
    within = Recorder(count=2)
    await BodyLimit(echo_length, 2500, {})(within.scope, within.receive, within.send)
    assert (within.status, within.body) == (200, {"length": 2000})
    larger = Recorder(count=5)
    limits = BodyLimit(echo_length, 2500, {"/api/v1/anything": 5000})
    await limits(larger.scope, larger.receive, larger.send)
    assert (larger.status, larger.body) == (200, {"length": 5000})


def test_a_refused_body_ends_the_connection_instead_of_being_read_to_its_end(
    runtime: Runtime,
) -> None:
    """The 413 left the connection open: the server then read the rest of the body, all of a
    5 GB upload, before the client (sending it whole first) saw the refusal."""
    runtime.settings = runtime.settings.model_copy(update={"max_body_bytes": SMALL})
    server = LiveServer(runtime)
    server.start()
    try:
        host, port = server.url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            head = (
                "POST /api/v1/benchmarks HTTP/1.1\r\nHost: x\r\n"
                "Content-Type: application/json\r\nContent-Length: 5000000000\r\n\r\n"
            )
            sock.sendall(head.encode() + b"{" * 1024)
            answer = b""
            while chunk := sock.recv(65536):  # b"" once the server has closed its end
                answer += chunk
        assert answer.startswith(b"HTTP/1.1 413 ")
        assert b"\r\nconnection: close\r\n" in answer.lower()
    finally:
        server.stop()
