"""A Python client whose requests the app in this process answers (no socket, no thread)."""

from __future__ import annotations

import httpx
from fastapi.testclient import TestClient

from benchgen.client import BenchGen


def connect(server: TestClient, secret: str) -> BenchGen:
    """A client for `server` holding the token `secret`."""

    def relay(request: httpx.Request) -> httpx.Response:
        answer = server.request(
            request.method, str(request.url), headers=request.headers, content=request.content
        )
        return httpx.Response(answer.status_code, headers=answer.headers, content=answer.content)

    return BenchGen("http://testserver", secret, transport=httpx.MockTransport(relay))
