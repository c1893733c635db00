"""`GET /api/v1/runs/compare` through HTTP: its place before `/runs/{run_id}`, the figures, what
a stranger gets, and the 422 for runs that do not compare."""

from __future__ import annotations

from fastapi.testclient import TestClient

from benchgen.core.context import Principal
from benchgen.services.benchmarks import lifecycle
from benchgen.services.runs import launch
from benchgen.services.runtime import Runtime
from tests.services.test_compare import FIRST, RANDOM, TWELVE, finished
from tests.services.test_runs import work_all
from tests.support import MCQ, World

COMPARE = "/api/v1/runs/compare"


def bearer(world: World, user_id: str, scopes: tuple[str, ...] = ("read",)) -> dict[str, str]:
    return {"Authorization": f"Bearer {world.token(user_id, list(scopes))}"}


def test_compare_is_its_own_route_not_a_run_id(client: TestClient, world: World) -> None:
    paths = list(client.app.openapi()["paths"])  # type: ignore[attr-defined]
    assert paths.index(COMPARE) < paths.index("/api/v1/runs/{run_id}")
    headers = bearer(world, world.user("owner@example.com"))
    answer = client.get(COMPARE, params={"a": "run_nope", "b": "run_nope"}, headers=headers)
    # The run looked up is `a`, not a run called "compare".
    assert answer.status_code == 404
    assert answer.json()["error"]["details"] == {"id": "run_nope"}


def test_the_owner_gets_every_figure(client: TestClient, world: World, runtime: Runtime) -> None:
    owner = world.user("owner@example.com")
    benchmark = world.benchmark(owner, TWELVE)
    run_a = finished(world, runtime, owner, benchmark, FIRST)
    run_b = finished(world, runtime, owner, benchmark, RANDOM)
    answer = client.get(COMPARE, params={"a": run_a, "b": run_b}, headers=bearer(world, owner))
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert (body["run_a"], body["run_b"], body["n"]) == (run_a, run_b, 12)
    assert body["both_right"] + body["both_wrong"] + body["only_a"] + body["only_b"] == 12
    assert body["ci_low"] <= body["difference"] <= body["ci_high"]
    assert 0 < body["p_value"] <= 1 and body["confidence"] == 0.95
    assert len(body["items"]) == 12 and {t["tag"] for t in body["tags"]} >= {"group0"}
    assert body["items"][0]["category"] in {"both_right", "both_wrong", "only_a", "only_b"}


def test_without_its_parameters_compare_is_refused_as_input_not_as_a_run(
    client: TestClient, world: World
) -> None:
    headers = bearer(world, world.user("owner@example.com"))
    answer = client.get(COMPARE, headers=headers)
    assert answer.status_code == 422, answer.text
    locs = [problem["loc"] for problem in answer.json()["error"]["details"]["errors"]]
    assert ["query", "a"] in locs and ["query", "b"] in locs


def test_a_stranger_is_refused(client: TestClient, world: World, runtime: Runtime) -> None:
    owner = world.user("owner@example.com")
    benchmark = world.benchmark(owner, TWELVE)
    world.do(Principal.web(owner), lifecycle.publish_benchmark, benchmark)
    stranger = world.user("stranger@example.com")
    run_a = finished(world, runtime, stranger, benchmark, FIRST)
    run_b = finished(world, runtime, stranger, benchmark, RANDOM)
    answer = client.get(COMPARE, params={"a": run_a, "b": run_b}, headers=bearer(world, stranger))
    assert answer.status_code == 403, answer.text
    assert "owner and collaborators compare runs" in answer.json()["error"]["message"]
    for prompt in ("Question 1", "pick one"):
        assert prompt not in answer.text


def test_runs_on_different_benchmarks_are_a_422(
    client: TestClient, world: World, runtime: Runtime
) -> None:
    owner = world.user("owner@example.com")
    run_a = finished(world, runtime, owner, world.benchmark(owner, TWELVE), FIRST)
    run_b = finished(world, runtime, owner, world.benchmark(owner, MCQ), FIRST)
    answer = client.get(COMPARE, params={"a": run_a, "b": run_b}, headers=bearer(world, owner))
    assert answer.status_code == 422
    error = answer.json()["error"]
    assert error["code"] == "invalid_input" and "different benchmarks" in error["message"]
    assert error["details"]["errors"][0]["loc"] == ["query", "b"]


def test_a_run_not_finished_is_a_422_and_an_unseen_one_a_404(
    client: TestClient, world: World, runtime: Runtime
) -> None:
    owner = world.user("owner@example.com")
    benchmark = world.benchmark(owner, TWELVE)
    done = finished(world, runtime, owner, benchmark, FIRST)
    queued = world.do(Principal.web(owner), launch.start_run, benchmark, RANDOM).id
    headers = bearer(world, owner)
    answer = client.get(COMPARE, params={"a": done, "b": queued}, headers=headers)
    assert answer.status_code == 422 and "queued" in answer.json()["error"]["message"]
    work_all(runtime)
    other = bearer(world, world.user("other@example.com"))
    answer = client.get(COMPARE, params={"a": done, "b": queued}, headers=other)
    assert answer.status_code == 404 and answer.json()["error"]["code"] == "not_found"
