"""`/metrics`: off until the operator sets a token; the token alone opens it (a user's API token
does not); queue depth, due age and lost leases are counted per kind, in Prometheus text."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient
from pydantic import SecretStr

from benchgen.app import create_app
from benchgen.core.context import Principal
from benchgen.db.tables import Job
from benchgen.services.runs import launch
from benchgen.services.runtime import Runtime
from tests.support import MCQ, OPERATOR, World

TOKEN = "metrics-token-for-the-scraper-0123456789"


@pytest.fixture
def client(runtime: Runtime) -> Iterator[TestClient]:
    runtime.settings = runtime.settings.model_copy(update={"metrics_token": SecretStr(TOKEN)})
    with TestClient(create_app(runtime.settings, runtime)) as test_client:
        yield test_client


def test_metrics_are_off_without_a_token(runtime: Runtime) -> None:
    with TestClient(create_app(runtime.settings, runtime)) as client:
        assert client.get("/metrics").status_code == 404


def test_only_the_metrics_token_opens_them(client: TestClient, world: World) -> None:
    assert client.get("/metrics").status_code == 401
    assert client.get("/metrics", headers={"Authorization": "Bearer wrong"}).status_code == 401
    ana = world.user("ana@example.com")
    user_token = world.token(ana, ["read", "runs"])
    assert (
        client.get("/metrics", headers={"Authorization": f"Bearer {user_token}"}).status_code == 401
    )


@pytest.mark.parametrize(("header", "status"), [(f"bearer {TOKEN}", 200), (TOKEN, 401)])
def test_the_scheme_is_read_as_http_reads_it(client: TestClient, header: str, status: int) -> None:
    """`bearer` was refused though schemes are case-insensitive (the API takes it), and the
    bare token, with no scheme at all, was taken."""
    assert client.get("/metrics", headers={"Authorization": header}).status_code == status


def test_queue_depth_age_and_lost_leases(client: TestClient, world: World) -> None:
    ana = world.user("ana@example.com")
    bench = world.benchmark(ana, MCQ)
    for _ in range(3):
        world.do(Principal.web(ana), launch.start_run, bench, "mdl_builtin_first")

    def age_one_and_lose_another(ctx: Any) -> None:
        first, second, _ = ctx.session.query(Job).order_by(Job.id).all()
        first.run_after = ctx.now() - timedelta(seconds=90)
        second.status, second.lease_expires_at = "running", ctx.now() - timedelta(seconds=5)

    world.ctx_call(OPERATOR, age_one_and_lose_another)
    world.rt.clock.advance(seconds=0)
    answer = client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/plain")
    text = answer.text
    assert 'benchgen_jobs{kind="run",status="queued"} 2' in text
    assert 'benchgen_jobs{kind="run",status="running"} 1' in text
    assert 'benchgen_jobs_lease_expired{kind="run"} 1' in text
    assert 'benchgen_runs{status="queued"} 3' in text
    assert "# TYPE benchgen_job_oldest_queued_seconds gauge" in text
    oldest = next(
        line for line in text.splitlines() if line.startswith("benchgen_job_oldest_queued_seconds{")
    )
    assert float(oldest.rsplit(" ", 1)[1]) >= 90
