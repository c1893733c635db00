"""The client reads every page of the lists that page since they follow `limit` and `cursor`:
models, compute pools, training bases and a leaderboard (whose rows page beside its columns)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from benchgen.client import BenchGen
from benchgen.client import benchmarks as benchmark_calls
from benchgen.client import models as model_calls
from benchgen.client import training as training_calls
from benchgen.core.context import Context, Principal
from benchgen.db.tables import Run
from benchgen.jobs.worker import Worker
from benchgen.services import models
from benchgen.services.runs import launch, leaderboards
from benchgen.services.runtime import Runtime
from benchgen.services.training import bases
from tests.client.relay import connect
from tests.support import OPERATOR, QA, World


@pytest.fixture
def small_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two rows a page, so that every list here takes several."""
    for calls in (benchmark_calls, model_calls, training_calls):
        monkeypatch.setattr(calls, "PAGE", 2)


def test_models_and_compute_come_back_whole(
    server: TestClient,
    world: World,
    runtime: Runtime,
    small_pages: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(runtime.settings, "training_gpus", "L4=2,H200=1,A100=4")
    ana = world.user("ana@example.com")
    for name in ("M1", "M2", "M3"):
        spec = {"name": name, "kind": "anthropic", "endpoint_model": "claude", "api_key": "sk-x"}
        world.do(Principal.web(ana), models.create_model, spec)
    listed = [m.id for m in world.do(Principal.web(ana), models.list_models)]
    with connect(server, world.token(ana, ["read"])) as bg:
        assert [m["id"] for m in bg.models()] == listed
        pools = [p["pool"] for p in bg.compute()]
    assert pools == ["cpu", "gpu:A100", "gpu:H200", "gpu:L4"]


def test_a_leaderboard_comes_back_whole_and_ranked(
    server: TestClient, world: World, runtime: Runtime, small_pages: None
) -> None:
    ana = world.user("ana@example.com", credits_=100)
    bm = world.benchmark(ana, QA)
    ranked = []
    for minute, score in enumerate([0.9, 0.7, 0.5, 0.3, None]):
        run_id = world.do(Principal.web(ana), launch.start_run, bm, "mdl_builtin_echo", None).id
        while Worker(runtime).run_once():
            pass
        world.do(Principal.web(ana), leaderboards.add_to_leaderboard, run_id)
        world.ctx_call(OPERATOR, _pin(run_id, score, minute))
        ranked.append(run_id)
    with connect(server, world.token(ana, ["read"])) as bg:
        board = bg.leaderboard(bm)
    assert [row["run_id"] for row in board["rows"]] == ranked
    assert [row["rank"] for row in board["rows"]] == [1, 2, 3, 4, 5]
    assert board["columns"] == ["accuracy"] and not board.get("next_cursor")


def _pin(run_id: str, score: float | None, minute: int) -> Any:
    def pin(ctx: Context) -> None:
        run = ctx.session.get(Run, run_id)
        assert run is not None
        run.scores = {"accuracy": score}
        run.finished_at = datetime(2026, 1, 1, 12, minute, tzinfo=UTC)

    return pin


def test_leaderboard_follows_the_cursor_with_the_phase_and_keeps_the_columns() -> None:
    seen: list[httpx.Request] = []

    def pages(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        after = request.url.params.get("cursor")
        rows = [{"rank": 3, "run_id": "run_c"}] if after else [{"rank": 1}, {"rank": 2}]
        board = {"benchmark_id": "bm_1", "phase_id": "ph_1", "columns": ["accuracy"]}
        return httpx.Response(200, json={**board, "rows": rows, "next_cursor": after or "c2"})

    def ending(request: httpx.Request) -> httpx.Response:
        answer = pages(request)
        if request.url.params.get("cursor") == "c2":
            body = {**answer.json(), "next_cursor": None}
            return httpx.Response(200, json=body)
        return answer

    with BenchGen("http://x", "bgp_x", transport=httpx.MockTransport(ending)) as bg:
        board = bg.leaderboard("bm_1", phase_id="ph_1")
    assert [row["rank"] for row in board["rows"]] == [1, 2, 3]
    assert board["columns"] == ["accuracy"] and board["next_cursor"] is None
    assert [r.url.params.get("cursor") for r in seen] == [None, "c2"]
    assert all(r.url.params["phase_id"] == "ph_1" for r in seen)


def test_training_bases_come_back_whole_a_page_at_a_time(
    server: TestClient, world: World, small_pages: None
) -> None:
    """The client asked for one page of the server's size, and a longer list lost its end."""
    ana = world.user("ana@example.com")
    for name in ("M1", "M2", "M3"):
        spec = {"name": name, "kind": "anthropic", "endpoint_model": "claude", "api_key": "sk-x"}
        world.do(Principal.web(ana), models.create_model, spec)
    listed = [base.id for base in world.do(Principal.web(ana), bases.list_training_bases)]
    limits: list[str | None] = []

    def relay(request: httpx.Request) -> httpx.Response:
        limits.append(request.url.params.get("limit"))
        answer = server.request(request.method, str(request.url), headers=request.headers)
        return httpx.Response(answer.status_code, headers=answer.headers, content=answer.content)

    secret = world.token(ana, ["read"])
    with BenchGen("http://testserver", secret, transport=httpx.MockTransport(relay)) as bg:
        assert [base["id"] for base in bg.training_bases()] == listed
    assert len(listed) > 2 and limits == ["2"] * -(-len(listed) // 2)
