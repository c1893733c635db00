"""Text hygiene through the HTTP API: spoofing characters are a 422 naming the field."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient
from httpx import Response

from benchgen.core.permissions import Scope
from tests.support import QA, World

ALL_SCOPES = sorted(scope.value for scope in Scope)
BENCHMARKS = "/api/v1/benchmarks"


@pytest.fixture
def auth(world: World) -> dict[str, str]:
    return bearer(world.token(world.user("ana@example.com"), ALL_SCOPES))


def bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


def loc_of(response: Response) -> list[str | int]:
    """The place named by a 422 envelope holding exactly one problem."""
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["code"] == "invalid_input"
    errors = error["details"]["errors"]
    assert len(errors) == 1, errors
    loc: list[str | int] = errors[0]["loc"]
    return loc


def test_a_spoofing_title_is_422_and_nothing_is_made(
    client: TestClient, auth: dict[str, str]
) -> None:
    response = client.post(BENCHMARKS, json={**QA, "title": "\u202e\u200b"}, headers=auth)
    assert loc_of(response) == ["body", "title"]
    assert "U+202E" in response.json()["error"]["message"]
    assert client.get(BENCHMARKS, headers=auth).json()["items"] == []


@pytest.mark.both_backends
def test_an_emoji_title_is_created_as_sent(client: TestClient, auth: dict[str, str]) -> None:
    title = "👩\u200d💻 Coders"
    response = client.post(BENCHMARKS, json={**QA, "title": title}, headers=auth)
    assert response.status_code == 201, response.text
    created = response.json()["benchmark"]["id"]
    assert client.get(f"{BENCHMARKS}/{created}", headers=auth).json()["title"] == title


@pytest.mark.parametrize(
    ("body", "loc"),
    [
        (
            {**QA, "questions": [{"prompt": "Capital of \u202eFrance?", "answer": "Paris"}]},
            ["body", "questions", 0, "prompt"],
        ),
        ({**QA, "title": "Two\nlines"}, ["body", "title"]),
        ({**QA, "title": "C1\u0085control"}, ["body", "title"]),
        ({**QA, "description": "Read \u2066this\u2069"}, ["body", "description"]),
    ],
)
def test_bidi_and_control_characters_are_422_naming_the_place(
    client: TestClient, auth: dict[str, str], body: dict[str, Any], loc: list[str | int]
) -> None:
    assert loc_of(client.post(BENCHMARKS, json=body, headers=auth)) == loc


@pytest.mark.both_backends
def test_a_description_keeps_tabs_and_newlines(client: TestClient, auth: dict[str, str]) -> None:
    description = "Capitals.\n\n\tPart one"
    response = client.post(BENCHMARKS, json={**QA, "description": description}, headers=auth)
    assert response.status_code == 201, response.text
    assert response.json()["benchmark"]["description"] == description


def test_edits_conversations_and_models_refuse_them_too(
    client: TestClient, auth: dict[str, str]
) -> None:
    created = client.post(BENCHMARKS, json=QA, headers=auth).json()["benchmark"]["id"]
    patch = client.patch(f"{BENCHMARKS}/{created}", json={"title": "x\u202ey"}, headers=auth)
    assert loc_of(patch) == ["body", "title"]
    chat = client.post("/api/v1/chat/conversations", json={"title": "\u202e"}, headers=auth)
    assert loc_of(chat) == ["body", "title"]
    model = {"name": "\u202eevil", "endpoint_model": "m", "base_url": "http://127.0.0.1:9/v1"}
    assert loc_of(client.post("/api/v1/models", json=model, headers=auth)) == ["body", "name"]
