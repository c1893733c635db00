"""What a careless client gets: a 404 or 422 in the envelope that says what to change, and
nothing created — for misspelt or repeated query parameters, a trailing slash, and bodies that
are not JSON objects."""

from __future__ import annotations

import json
from typing import Annotated, Any

import pytest
from fastapi import FastAPI, Query
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient
from httpx import Response

from benchgen.api import parameters
from tests.support import QA, World

BENCHMARKS = "/api/v1/benchmarks"


@pytest.fixture
def auth(world: World) -> dict[str, str]:
    ana = world.user("ana@example.com")
    return {"Authorization": f"Bearer {world.token(ana, ['read', 'create'])}"}


def _refused(response: Response, status: int = 422) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    error: dict[str, Any] = response.json()["error"]
    assert error["code"] == ("invalid_input" if status == 422 else "not_found")
    return error


def _nothing_made(client: TestClient, auth: dict[str, str]) -> None:
    assert client.get(BENCHMARKS, headers=auth).json()["items"] == []


@pytest.mark.parametrize(
    ("method", "query"),
    [("GET", "limt=5"), ("GET", "page=2"), ("POST", "dry_run=true")],
)
def test_a_query_parameter_the_route_does_not_take_is_refused(
    client: TestClient, auth: dict[str, str], method: str, query: str
) -> None:
    body = QA if method == "POST" else None
    sent = client.request(method, f"{BENCHMARKS}?{query}", json=body, headers=auth)
    error = _refused(sent)
    name = query.split("=")[0]
    assert error["details"]["errors"] == [
        {"loc": ["query", name], "msg": error["details"]["errors"][0]["msg"]}
    ]
    assert "not a query parameter" in error["message"]
    if method == "GET":
        assert "cursor, limit" in error["message"]  # what it does take
    _nothing_made(client, auth)


def test_a_query_parameter_given_twice_is_refused(client: TestClient, auth: dict[str, str]) -> None:
    error = _refused(client.get(f"{BENCHMARKS}?limit=1&limit=2", headers=auth))
    assert error["details"]["errors"][0]["loc"] == ["query", "limit"]
    assert "more than once" in error["message"]


def test_only_a_list_parameter_may_be_given_more_than_once() -> None:
    """`?tag=a&tag=b` is how a list is sent: refusing every repeat would refuse it."""
    app = FastAPI()

    @app.get("/runs")
    def runs(
        tag: Annotated[list[str], Query()],
        label: Annotated[list[str] | None, Query()] = None,
        limit: int = 20,
    ) -> None:
        """A route of the shape list filters take."""

    [route] = [r for r in app.routes if isinstance(r, APIRoute)]
    assert parameters.names_in(route, "query") == {"tag", "label", "limit"}
    assert parameters.repeatable_in(route, "query") == {"tag", "label"}


@pytest.mark.parametrize("method", ["GET", "POST", "HEAD"])
def test_a_trailing_slash_is_a_404_in_the_envelope_not_a_redirect(
    client: TestClient, auth: dict[str, str], method: str
) -> None:
    body = QA if method == "POST" else None
    sent = client.request(
        method, f"{BENCHMARKS}/?limit=1", json=body, headers=auth, follow_redirects=False
    )
    assert "location" not in sent.headers
    if method == "HEAD":
        assert sent.status_code == 404 and sent.content == b""
        return
    error = _refused(sent, 404)
    assert "'/api/v1/benchmarks'" in error["message"]
    _nothing_made(client, auth)


DEEP = b'{"prompt": "p", "answer": "a", "metadata": ' + b'{"a":' * 50_000 + b"1" + b"}" * 50_000
NESTED = b'{"title": "T", "format": "qa", "questions": [' + DEEP + b"}]}"


@pytest.mark.parametrize(
    ("content", "msg"),
    [
        (b'{"title": "T",', "not valid JSON: Expecting property name enclosed in double quotes"),
        (b'{"title" "T"}', "not valid JSON: Expecting ':' delimiter at character 9"),
        (b"", "needs a JSON object; the request has no body"),
        (b"null", "must be a JSON object"),
        (json.dumps([QA]).encode(), "must be a JSON object"),
        (b'"title"', "must be a JSON object"),
        (NESTED, "nested too deeply"),
    ],
)
def test_a_body_that_is_no_json_object_is_refused_at_the_body_saying_why(
    client: TestClient, auth: dict[str, str], content: bytes, msg: str
) -> None:
    headers = {**auth, "Content-Type": "application/json"}
    error = _refused(client.post(BENCHMARKS, content=content, headers=headers))
    [problem] = error["details"]["errors"]
    assert problem["loc"] == ["body"] and problem["msg"].startswith(msg), problem
    _nothing_made(client, auth)


@pytest.mark.parametrize("escape", ["\\ud800", "\\udfff", "a\\ud83d"])
def test_a_lone_surrogate_in_a_string_is_refused_at_its_field(
    client: TestClient, auth: dict[str, str], escape: str
) -> None:
    body = json.dumps({**QA, "title": "X"}).replace('"X"', f'"{escape}"').encode()
    headers = {**auth, "Content-Type": "application/json"}
    error = _refused(client.post(BENCHMARKS, content=body, headers=headers))
    assert error["details"]["errors"][0]["loc"] == ["body", "title"]
    _nothing_made(client, auth)


@pytest.mark.parametrize("method", ["OPTIONS", "DELETE", "PUT"])
def test_a_method_the_path_does_not_take_names_the_ones_it_does(
    client: TestClient, auth: dict[str, str], method: str
) -> None:
    sent = client.request(method, BENCHMARKS, headers=auth)
    assert sent.status_code == 405, sent.text
    error = sent.json()["error"]
    assert error["code"] == "method_not_allowed"
    assert error["message"] == f"{method} is not allowed here; this path takes GET, POST"
    assert sent.headers["allow"] == "GET, POST"
