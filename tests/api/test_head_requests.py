"""HEAD on every GET route answers as the GET would, without a body: same status, same headers,
same authentication; a path without GET still answers 405, and the OpenAPI document and the
route table list GET only."""

from __future__ import annotations

import re
from typing import Any

import pytest
from fastapi.testclient import TestClient
from httpx import Response

from benchgen.core.context import Principal
from benchgen.core.permissions import Scope
from benchgen.services.runs import launch
from tests.support import QA, World, flat_routes

# Headers that differ between any two responses, whatever the method.
VARYING = {"date", "set-cookie", "x-request-id"}


@pytest.fixture
def ana(world: World) -> tuple[str, dict[str, str]]:
    user = world.user("ana@example.com", credits_=100)
    token = world.token(user, sorted(scope.value for scope in Scope))
    return user, {"Authorization": f"Bearer {token}"}


def same_but_bodiless(got: Response, head: Response) -> None:
    assert head.status_code == got.status_code, (head.request.url, got.text)
    assert head.content == b""
    shown = {k: v for k, v in got.headers.items() if k not in VARYING}
    assert {k: v for k, v in head.headers.items() if k not in VARYING} == shown


def test_every_api_get_route_answers_head_as_get(
    client: TestClient, world: World, ana: tuple[str, dict[str, str]]
) -> None:
    user, auth = ana
    bm = world.benchmark(user, QA)
    run = world.do(Principal.web(user), launch.start_run, bm, "mdl_builtin_echo", None).id
    ids = {"benchmark_id": bm, "run_id": run}
    checked = []
    for path, route in flat_routes(client.app):  # type: ignore[arg-type]
        if not path.startswith("/api/v1") or "GET" not in (route.methods or ()):
            continue
        url = re.sub(r"\{(\w+)\}", lambda m: ids.get(m.group(1), "x_unknown"), path)
        for headers in (auth, {}):
            same_but_bodiless(client.get(url, headers=headers), client.head(url, headers=headers))
        checked.append(path)
    assert len(checked) > 30 and "/api/v1/benchmarks/{benchmark_id}/leaderboard" in checked


@pytest.mark.parametrize(
    ("path", "status"),
    [("/api/v1/me", 200), ("/api/v1/openapi.json", 200), ("/healthz", 200), ("/", 200)],
)
def test_head_on_a_page_or_document_has_the_get_head(
    client: TestClient, ana: tuple[str, dict[str, str]], path: str, status: int
) -> None:
    _, auth = ana
    got, head = client.get(path, headers=auth), client.head(path, headers=auth)
    assert head.status_code == got.status_code == status
    assert head.content == b"" and got.content != b""
    assert head.headers["content-type"] == got.headers["content-type"]
    if path.startswith("/api/") or path == "/healthz":
        assert head.headers["content-length"] == str(len(got.content))


def test_head_without_a_token_is_refused_as_get_is(client: TestClient) -> None:
    head = client.head("/api/v1/me")
    assert head.status_code == 401 and head.headers["www-authenticate"] == "Bearer"
    assert head.content == b""


def test_head_on_a_path_without_get_is_still_405(
    client: TestClient, ana: tuple[str, dict[str, str]]
) -> None:
    _, auth = ana
    post_only = client.head("/api/v1/runs/run_x/cancel", headers=auth)
    assert post_only.status_code == 405 and post_only.content == b""
    assert client.get("/api/v1/runs/run_x/cancel", headers=auth).status_code == 405


def test_the_document_lists_no_head_operations(client: TestClient) -> None:
    document: dict[str, Any] = client.get("/api/v1/openapi.json").json()
    methods = {method for operations in document["paths"].values() for method in operations}
    assert "head" not in methods
