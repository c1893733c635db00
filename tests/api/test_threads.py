"""An API request's sync endpoint and its unit of work run in one worker thread: one hop from
the event loop per request, not one to open the transaction, one for the endpoint, one to
validate the answer and one to commit."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio.to_thread
import pytest
from fastapi import APIRouter
from fastapi.testclient import TestClient

from benchgen.api.deps import ContextDep, opened_by_route
from benchgen.api.routing import OneThreadRoute
from benchgen.app import create_app
from benchgen.services.chat import conversations
from benchgen.services.runtime import Runtime
from tests.support import QA, World, flat_routes

ALL_SCOPES = ["read", "runs", "create", "edit", "publish"]


@pytest.fixture
def hops(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The names of the functions handed to a worker thread, in order."""
    handed: list[str] = []
    run_sync = anyio.to_thread.run_sync

    async def counted(function: Any, *args: Any, **kwargs: Any) -> Any:
        called = getattr(function, "func", function)  # starlette hands over a partial
        handed.append(called.__qualname__)
        return await run_sync(function, *args, **kwargs)

    monkeypatch.setattr(anyio.to_thread, "run_sync", counted)
    yield handed


def test_each_request_hops_to_a_worker_thread_once(
    runtime: Runtime, world: World, hops: list[str]
) -> None:
    secret = world.token(world.user("ana@example.com"), ALL_SCOPES)
    auth = {"Authorization": f"Bearer {secret}"}
    with TestClient(create_app(runtime.settings, runtime)) as client:
        client.get("/api/v1/benchmarks", headers=auth)  # the token's last-used stamp, once
        requests = [
            ("POST", "/api/v1/benchmarks", QA, 201),
            ("GET", "/api/v1/benchmarks", None, 200),
            ("POST", "/api/v1/chat/conversations", {"title": "Sums"}, 201),
            ("GET", "/api/v1/benchmarks/bmk_missing", None, 404),  # refused by the service
        ]
        for method, path, body, status in requests:
            hops.clear()
            response = client.request(method, path, json=body, headers=auth)
            assert response.status_code == status, response.text
            assert hops == ["_run"], (method, path)
        created = client.get("/api/v1/benchmarks", headers=auth).json()["items"][0]
        hops.clear()
        response = client.get(f"/api/v1/benchmarks/{created['id']}", headers=auth)
    assert response.json()["id"] == created["id"]
    assert hops == ["_run"]


def test_every_api_endpoint_opens_its_unit_of_work_in_its_own_thread(runtime: Runtime) -> None:
    routes = list(flat_routes(create_app(runtime.settings, runtime)))
    apart = [
        path
        for path, route in routes
        if any(d.call is opened_by_route for d in route.dependant.dependencies)
    ]
    assert apart == []
    # Named and documented as written (operation ids and summaries come from these).
    named = {route.name: route for _, route in routes}
    assert named["list_benchmarks"].description.startswith("Benchmarks you can see")


def test_an_endpoint_that_would_run_services_on_the_event_loop_is_refused() -> None:
    async def upload(ctx: ContextDep) -> None:
        """Would block every other request while its services run."""

    with pytest.raises(TypeError, match="must be sync"):
        OneThreadRoute("/upload", upload)


def test_a_route_of_another_class_cannot_open_a_unit_of_work(
    runtime: Runtime, world: World
) -> None:
    router = APIRouter()

    @router.get("/elsewhere")
    def elsewhere(ctx: ContextDep) -> str:
        return ctx.principal.kind

    app = create_app(runtime.settings, runtime)
    app.include_router(router)
    secret = world.token(world.user("ana@example.com"), ALL_SCOPES)
    with TestClient(app, raise_server_exceptions=False) as client:
        answer = client.get("/elsewhere", headers={"Authorization": f"Bearer {secret}"})
    assert answer.status_code == 500


def test_an_answer_that_fails_its_response_model_rolls_the_work_back(
    runtime: Runtime, world: World
) -> None:
    router = APIRouter(route_class=OneThreadRoute)

    @router.post("/broken", response_model=int)
    def broken(ctx: ContextDep) -> Any:
        conversations.create_conversation(ctx, "Kept?")
        return "not a number"  # a bug the response model catches

    app = create_app(runtime.settings, runtime)
    app.include_router(router)
    secret = world.token(world.user("ana@example.com"), ALL_SCOPES)
    auth = {"Authorization": f"Bearer {secret}"}
    with TestClient(app, raise_server_exceptions=False) as client:
        answer = client.post("/broken", headers=auth)
        listed = client.get("/api/v1/chat/conversations", headers=auth).json()
    assert answer.status_code == 500
    assert listed["items"] == []
