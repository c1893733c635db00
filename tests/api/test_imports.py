"""`POST /api/v1/benchmarks/import` on hostile files: 422 with the line, 403 before any parsing."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient
from httpx import Response

from benchgen.services.benchmarks import imports
from tests.support import World

DEEP = "[" * 100_000 + "]" * 100_000
HOSTILE = {
    "nested json": ("jsonl", '{"prompt": "2+2?", "answer": "4"}\n' + DEEP, 2),
    "bad csv record": ("csv", 'prompt,answer\nOne?,1\nTwo?,"x"y\n', 3),
}


def post(
    client: TestClient, world: World, scopes: list[str], content_format: str, content: str
) -> Response:
    secret = world.token(world.user(f"{'-'.join(scopes)}@example.com"), scopes)
    body = {"title": "File", "format": "qa", "content_format": content_format, "content": content}
    return client.post(
        "/api/v1/benchmarks/import", json=body, headers={"Authorization": f"Bearer {secret}"}
    )


def error(response: Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body: dict[str, Any] = response.json()["error"]
    return body


@pytest.mark.parametrize(("content_format", "content", "line"), HOSTILE.values(), ids=HOSTILE)
def test_a_hostile_file_is_422_at_its_line(
    client: TestClient, world: World, content_format: str, content: str, line: int
) -> None:
    refused = error(post(client, world, ["create", "read"], content_format, content), 422)
    assert refused["code"] == "invalid_input"
    assert refused["details"]["errors"][0]["loc"] == ["body", "content", line]
    assert refused["message"].startswith(f"content line {line}: ")


@pytest.mark.parametrize(("content_format", "content", "line"), HOSTILE.values(), ids=HOSTILE)
def test_a_token_without_create_gets_403_and_nothing_is_parsed(
    client: TestClient,
    world: World,
    monkeypatch: pytest.MonkeyPatch,
    content_format: str,
    content: str,
    line: int,
) -> None:
    def never(_: str) -> list[dict[str, Any]]:
        raise AssertionError("parsed before the scope was checked")

    monkeypatch.setattr(imports, "_jsonl", never)
    monkeypatch.setattr(imports, "_csv", never)
    denied = error(post(client, world, ["read"], content_format, content), 403)
    assert denied["code"] == "permission_denied"
