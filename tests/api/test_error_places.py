"""Every 422 places its problems one way: `loc` starts with where the input was (body, query or
path), whether the framework's parsing or a service's rules found the problem."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient
from starlette.requests import Request

from benchgen.api.errors import placed
from benchgen.services.runtime import Runtime
from tests.services.test_compare import FIRST, TWELVE, finished
from tests.support import MCQ, World, flat_routes

PLACES = {"body", "query", "path"}


@pytest.fixture
def auth(world: World) -> dict[str, str]:
    ana = world.user("ana@example.com", credits_=1000)
    return {"Authorization": f"Bearer {world.token(ana, ['read', 'create', 'edit', 'runs'])}"}


def _locs(response: Any) -> list[list[Any]]:
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["code"] == "invalid_input" and error["message"]
    return [problem["loc"] for problem in error["details"]["errors"]]


BAD_ANSWER = {**MCQ, "questions": [{"prompt": "Pick", "choices": ["x", "y"], "answer": "Q"}]}
IMPORT = {"title": "T", "format": "qa", "content": "{"}


@pytest.mark.parametrize(
    ("method", "path", "body", "loc"),
    [
        # The framework's parsing of a body, and a service's rules on one.
        ("POST", "/api/v1/benchmarks", {"format": "qa", "questions": []}, ["body", "title"]),
        ("POST", "/api/v1/benchmarks", BAD_ANSWER, ["body", "questions", 0, "answer"]),
        ("POST", "/api/v1/benchmarks/import", IMPORT, ["body", "content", 1]),
        ("POST", "/api/v1/chat/conversations", {"title": "\u202e"}, ["body", "title"]),
        # The framework's parsing of the query, and the edge's own cursor check.
        ("GET", "/api/v1/benchmarks?limit=0", None, ["query", "limit"]),
        ("GET", "/api/v1/benchmarks?cursor=forged", None, ["query", "cursor"]),
        # The edge's check of a path parameter.
        ("GET", "/api/v1/benchmarks/bm_%00", None, ["path", "benchmark_id"]),
    ],
)
def test_every_422_leads_its_loc_with_the_place(
    client: TestClient,
    auth: dict[str, str],
    method: str,
    path: str,
    body: dict[str, Any] | None,
    loc: list[Any],
) -> None:
    locs = _locs(client.request(method, path, json=body, headers=auth))
    assert locs[0] == loc
    assert all(found[0] in PLACES for found in locs), locs


def test_a_services_problem_with_a_query_parameter_is_in_the_query(
    client: TestClient, world: World, runtime: Runtime
) -> None:
    owner = world.user("owner@example.com")
    run_a = finished(world, runtime, owner, world.benchmark(owner, TWELVE), FIRST)
    run_b = finished(world, runtime, owner, world.benchmark(owner, MCQ), FIRST)
    headers = {"Authorization": f"Bearer {world.token(owner, ['read'])}"}
    answer = client.get("/api/v1/runs/compare", params={"a": run_a, "b": run_b}, headers=headers)
    assert _locs(answer) == [["query", "b"]]


def _route(client: TestClient, path: str, method: str) -> APIRoute:
    return next(
        route
        for found, route in flat_routes(client.app)  # type: ignore[arg-type]
        if found == path and method in (route.methods or ())
    )


@pytest.mark.parametrize(
    ("loc", "expected"),
    [
        (["run_id"], ["path", "run_id"]),
        (["scoring", "method"], ["body", "scoring", "method"]),
        ([], ["body"]),
        (["query", "cursor"], ["query", "cursor"]),  # placed by the edge already: kept
    ],
)
def test_a_service_loc_is_placed_by_the_routes_own_parameters(
    client: TestClient, loc: list[Any], expected: list[Any]
) -> None:
    route = _route(client, "/api/v1/runs/{run_id}/rescore", "POST")
    request = Request({"type": "http", "route": route, "headers": []})
    problem = {"loc": loc, "msg": "wrong", "line": 3}
    assert placed(request, [problem]) == [{"loc": expected, "msg": "wrong", "line": 3}]


def test_a_rule_of_the_request_shape_is_said_without_the_frameworks_prefix(
    client: TestClient, auth: dict[str, str], world: World
) -> None:
    """Rules checked while the body was parsed read "Value error, must not contain U+0007":
    the framework's name for the check, in front of the rule a person needs."""
    ana = world.user("bo@example.com")
    bm = world.benchmark(ana, MCQ)
    body = {"benchmark_id": bm, "model_id": FIRST, "settings": {"system_prompt": "a\x07b"}}
    answer = client.post("/api/v1/runs", json=body, headers=auth)
    assert answer.status_code == 422, answer.text
    error = answer.json()["error"]
    [problem] = error["details"]["errors"]
    assert problem["loc"] == ["body", "settings", "system_prompt"]
    assert problem["msg"].startswith("must not contain U+0007")
    assert error["message"] == f"body.settings.system_prompt: {problem['msg']}"
