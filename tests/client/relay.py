"""A Python client whose requests the app in this process answers (no socket, no thread), for
tests of the client and of the CLI's remote mode."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

import benchgen.client as client_package
from benchgen.client import BenchGen

URL = "http://testserver"


def connect(server: TestClient, secret: str) -> BenchGen:
    """A client for `server` holding the token `secret`."""

    def relay(request: httpx.Request) -> httpx.Response:
        answer = server.request(
            request.method, str(request.url), headers=request.headers, content=request.content
        )
        return httpx.Response(answer.status_code, headers=answer.headers, content=answer.content)

    return BenchGen(URL, secret, transport=httpx.MockTransport(relay))


@contextmanager
def served_to_the_cli(
    app: FastAPI, monkeypatch: pytest.MonkeyPatch, secret: str
) -> Iterator[list[str]]:
    """Inside the block, a CLI command given the options yielded (`--url … --token SECRET`)
    reaches `app`; the client it makes must hold `secret` (from --token or BENCHGEN_TOKEN)."""
    with TestClient(app) as server:

        def connect_cli(url: str, token: str | None) -> BenchGen:
            assert (url, token) == (URL, secret)
            return connect(server, secret)

        monkeypatch.setattr(client_package, "BenchGen", connect_cli)
        yield ["--url", URL, "--token", secret]
