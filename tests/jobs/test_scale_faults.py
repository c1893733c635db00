"""Scale-out under faults, on this machine's PostgreSQL and broker: `benchgen serve` and two
`benchgen worker` processes; five users submit runs over HTTP on a built-in model and a slow
paid stub; half-way one worker is killed with SIGKILL, the server restarted and (Redis) the
broker restarted, losing its messages. One user also submits results to a custom benchmark,
scored in the sandbox. Every run completes exactly once, no answer is recorded twice, every credit
reservation is closed once, each balance adds up to the credit and no sandbox is left behind."""

from __future__ import annotations

import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select

from benchgen.core.context import Principal
from benchgen.db.tables import CreditEntry, Run, RunResult
from benchgen.services import models
from benchgen.services.benchmarks import bundles
from benchgen.services.runs import launch, leaderboards
from benchgen.services.runtime import Runtime
from tests.bundle_factory import bundle, require_sandbox, results
from tests.conftest import IN_CI
from tests.evals.stub_openai import StubOpenAI
from tests.processes import Deployment
from tests.support import MCQ, OPERATOR, World

pytest.importorskip("celery", reason="the celery extra is not installed")
pytestmark = pytest.mark.usefixtures("machine_brokers")  # one test at a time, across workers
USERS = 5
GRANT = 1000


def _require(port: int, name: str) -> None:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    except OSError:
        if IN_CI:
            pytest.fail(f"CI=true requires {name} on 127.0.0.1:{port}")
        pytest.skip(f"{name} does not answer on 127.0.0.1:{port}")


@pytest.fixture
def deployment(runtime: Runtime) -> Iterator[Callable[[str], Deployment]]:
    made: list[Deployment] = []

    def make(broker: str) -> Deployment:
        made.append(Deployment(runtime, broker))
        return made[-1]

    yield make
    for one in made:
        one.stop()


def _restart_redis() -> None:
    """Redis keeps nothing on disk here: a restart loses every message it held."""
    subprocess.run(["redis-cli", "shutdown", "nosave"], check=False, capture_output=True)  # noqa: S607
    subprocess.run(["redis-server", "/etc/redis/redis.conf"], check=True, capture_output=True)  # noqa: S607
    for _ in range(50):
        if subprocess.run(["redis-cli", "ping"], capture_output=True).returncode == 0:  # noqa: S607
            return
        time.sleep(0.1)
    raise AssertionError("Redis did not come back")


def _submit(url: str, token: str, path: str = "/api/v1/runs", **request: Any) -> str:
    """POST a run (a JSON body or a submission's file), retrying while the server restarts
    (connections refused)."""
    deadline = time.monotonic() + 90
    while True:
        try:
            answer = httpx.post(
                f"{url}{path}", headers={"Authorization": f"Bearer {token}"}, **request
            )
            assert answer.status_code == 202, answer.text
            return str(answer.json()["id"])
        except httpx.TransportError:
            assert time.monotonic() < deadline, "the server stayed away"
            time.sleep(0.3)


def _scenario(world: World, live: Deployment, runs_each: int, broker_restart: bool) -> None:
    world.rt.settings.model_host_allowlist = "127.0.0.1"
    with StubOpenAI(latency_s=0.15) as stub:
        paid = world.do(
            OPERATOR,
            models.create_platform_model,
            {
                "name": "Slow stub",
                "endpoint_model": "stub",
                "base_url": stub.base_url,
                "price_per_question": 1,
            },
        )
        people = [world.user(f"user{n}@example.com", credits_=GRANT) for n in range(USERS)]
        tokens = [world.token(user, ["read", "runs"], days=365) for user in people]
        benches = [world.benchmark(user, MCQ) for user in people]
        custom = world.do(Principal.web(people[0]), bundles.upload_bundle, bundle(), "b.zip")
        submission_path = f"/api/v1/benchmarks/{custom.benchmark.id}/submissions"
        half_right = {"files": {"submission": ("r.zip", results({"q1": "paris", "q2": "5"}))}}
        live.serve()
        doomed = live.start("worker", "--threads", "2")
        live.start("worker", "--threads", "2")
        submitted: list[list[str]] = [[] for _ in people]
        halfway = threading.Barrier(USERS + 1)

        def submit_all(n: int) -> None:
            for k in range(runs_each):
                if k == runs_each // 2:
                    halfway.wait(120)
                    halfway.wait(120)  # the faults happen between the two waits
                model = paid.id if k % 2 else "mdl_builtin_first"
                body = {"benchmark_id": benches[n], "model_id": model}
                submitted[n].append(_submit(live.url, tokens[n], json=body))

        threads = [threading.Thread(target=submit_all, args=(n,)) for n in range(USERS)]
        for thread in threads:
            thread.start()
        scored = [_submit(live.url, tokens[0], submission_path, **half_right) for _ in range(2)]
        halfway.wait(120)
        doomed.kill()  # SIGKILL: no goodbye, its jobs' leases just run out
        live.restart_server()
        if broker_restart:
            _restart_redis()
        live.start("worker", "--threads", "2")
        halfway.wait(120)
        scored += [_submit(live.url, tokens[0], submission_path, **half_right) for _ in range(2)]
        for thread in threads:
            thread.join(180)
        run_ids = [run for mine in submitted for run in mine]
        assert len(run_ids) == USERS * runs_each
        _wait_final(world, run_ids + scored, 300)
    _check_once(world, run_ids, people, benches)
    for run_id in scored:
        assert world.do(Principal.web(people[0]), launch.get_run, run_id).scores["accuracy"] == 0.5
    assert not live.started_here()  # no sandbox left behind


def _wait_final(world: World, run_ids: list[str], timeout_s: float) -> None:
    def statuses(ctx: Any) -> list[str]:
        rows = ctx.session.execute(select(Run.status).where(Run.id.in_(run_ids)))
        return [status for (status,) in rows]

    deadline = time.monotonic() + timeout_s
    while True:
        now = world.ctx_call(OPERATOR, statuses)
        if set(now) == {"completed"} and len(now) == len(run_ids):
            return
        assert time.monotonic() < deadline, sorted(now)
        time.sleep(0.5)


def _check_once(world: World, run_ids: list[str], people: list[str], benches: list[str]) -> None:
    questions = len(MCQ["questions"])

    def read(ctx: Any) -> dict[str, Any]:
        results = ctx.session.execute(
            select(RunResult.run_id, func.count(), func.count(func.distinct(RunResult.position)))
            .where(RunResult.run_id.in_(run_ids))
            .group_by(RunResult.run_id)
        ).all()
        entries = ctx.session.scalars(select(CreditEntry).where(CreditEntry.user_id.in_(people)))
        return {"results": results, "entries": list(entries)}

    seen = world.ctx_call(OPERATOR, read)
    assert {(count, distinct) for _, count, distinct in seen["results"]} == {(questions, questions)}
    assert len(seen["results"]) == len(run_ids)  # every run recorded, none twice
    reserved = [e for e in seen["entries"] if e.kind == "reserve"]
    closings = [e.reservation_id for e in seen["entries"] if e.kind in ("settle", "refund")]
    assert sorted(closings) == sorted(e.id for e in reserved)  # each closed exactly once
    for user in people:
        mine = [e.amount for e in seen["entries"] if e.user_id == user]
        paid_runs = world.ctx_call(OPERATOR, lambda ctx, u=user: _paid(ctx, u))
        assert sum(mine) == GRANT - paid_runs * questions
    for user, bench in zip(people, benches, strict=True):
        _rank_one(world, user, bench)


def _paid(ctx: Any, user: str) -> int:
    """Runs of the paid stub model that `user` launched."""
    return int(
        ctx.session.scalar(
            select(func.count()).where(Run.launched_by == user, Run.model_id != "mdl_builtin_first")
        )
        or 0
    )


def _rank_one(world: World, user: str, bench: str) -> None:
    def first_run(ctx: Any) -> str:
        return str(ctx.session.scalar(select(Run.id).where(Run.benchmark_id == bench).limit(1)))

    run_id = world.ctx_call(OPERATOR, first_run)
    world.do(Principal.web(user), leaderboards.add_to_leaderboard, run_id)
    board = world.do(Principal.web(user), leaderboards.get_leaderboard, bench)
    assert [row.run_id for row in board.rows] == [run_id]


@pytest.mark.parametrize("backend", ["postgres"])
def test_redis_deployment_survives_a_killed_worker_a_restarted_server_and_broker(
    world: World, deployment: Callable[[str], Deployment]
) -> None:
    _require(6379, "Redis")
    require_sandbox()
    _scenario(world, deployment("redis://127.0.0.1:6379/11"), runs_each=20, broker_restart=True)


@pytest.mark.parametrize("backend", ["postgres"])
def test_rabbitmq_deployment_survives_a_killed_worker_and_a_restarted_server(
    world: World, deployment: Callable[[str], Deployment]
) -> None:
    _require(5672, "RabbitMQ")
    require_sandbox()
    url = "amqp://guest:guest@127.0.0.1:5672//"
    _scenario(world, deployment(url), runs_each=6, broker_restart=False)
