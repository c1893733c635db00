"""Dispatch through a broker (Redis, and RabbitMQ once): a run queued here is published and a
`benchgen worker` process elsewhere takes it; a job whose message was lost is sent again by the
sweeper; each run completes once with one result per question; workers keep to their queues;
messages are JSON only."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from benchgen.core.context import Principal
from benchgen.db.tables import Run, RunResult
from benchgen.jobs.dispatching import dispatching
from benchgen.services.runs import launch
from benchgen.services.runtime import Runtime
from tests.conftest import IN_CI
from tests.support import MCQ, OPERATOR, World

celery = pytest.importorskip("celery", reason="the celery extra is not installed")
pytestmark = pytest.mark.usefixtures("machine_brokers")  # one test at a time, across workers
FIRST = "mdl_builtin_first"
REDIS = ("127.0.0.1", 6379)
RABBITMQ = ("127.0.0.1", 5672)


def _require(address: tuple[str, int], name: str) -> None:
    try:
        socket.create_connection(address, timeout=2).close()
    except OSError:
        if IN_CI:
            pytest.fail(f"CI=true requires {name} on {address[0]}:{address[1]}")
        pytest.skip(f"{name} does not answer on {address[0]}:{address[1]}")


@pytest.fixture
def redis_url() -> str:
    _require(REDIS, "Redis")
    import redis

    # A database of its own, emptied: messages of an earlier test never reach this one.
    redis.Redis(*REDIS, db=13).flushdb()
    return f"redis://{REDIS[0]}:{REDIS[1]}/13"


@pytest.fixture
def workers(runtime: Runtime) -> Iterator[Callable[..., subprocess.Popen[bytes]]]:
    """Starts `benchgen worker` processes on the test's database; all stop at the end."""
    started: list[subprocess.Popen[bytes]] = []

    def start(
        broker: str | None, queues: str = "runs", sweep_s: int = 600
    ) -> subprocess.Popen[bytes]:
        env = {
            **os.environ,
            "BENCHGEN_DATA_DIR": str(runtime.settings.data_dir),
            "BENCHGEN_DATABASE_URL": runtime.settings.resolved_database_url(),
            # Long unless a test is about the sweeper: a run must arrive by its own message.
            "BENCHGEN_JOB_SWEEP_S": str(sweep_s),
            "BENCHGEN_USER_RUN_SLOTS": "4",
        }
        env.pop("BENCHGEN_BROKER_URL", None)
        if broker:
            env["BENCHGEN_BROKER_URL"] = broker
        command = [str(Path(sys.executable).parent / "benchgen"), "worker", "--queues", queues]
        process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL)  # noqa: S603
        started.append(process)
        return process

    yield start
    for process in started:
        process.terminate()
    for process in started:
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()


def _runs(world: World, count: int, broker: str | None) -> list[str]:
    """`count` runs queued by several users, published to `broker` as they commit."""
    users = [world.user(f"user{n}@example.com") for n in range(3)]
    benchmarks = [world.benchmark(user, MCQ) for user in users]
    settings = world.rt.settings.model_copy(update={"broker_url": broker})
    with dispatching(settings):
        return [
            world.do(Principal.web(users[n % 3]), launch.start_run, benchmarks[n % 3], FIRST).id
            for n in range(count)
        ]


def _statuses(world: World, run_ids: list[str]) -> list[str]:
    def read(ctx: Any) -> list[str]:
        return [ctx.session.get(Run, run_id).status for run_id in run_ids]

    return world.ctx_call(OPERATOR, read)


def _wait_done(world: World, run_ids: list[str], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while set(_statuses(world, run_ids)) != {"completed"}:
        assert time.monotonic() < deadline, _statuses(world, run_ids)
        time.sleep(0.3)


def _results_per_run(world: World, run_ids: list[str]) -> set[int]:
    def count(ctx: Any) -> set[int]:
        return {
            int(ctx.session.scalar(select(func.count()).where(RunResult.run_id == run_id)) or 0)
            for run_id in run_ids
        }

    return world.ctx_call(OPERATOR, count)


@pytest.mark.parametrize("backend", ["sqlite"])
def test_runs_published_to_redis_complete_once_on_two_workers(
    world: World, redis_url: str, workers: Any
) -> None:
    workers(redis_url)
    workers(redis_url)
    run_ids = _runs(world, 12, redis_url)
    _wait_done(world, run_ids, 120)
    assert _results_per_run(world, run_ids) == {len(MCQ["questions"])}
    # Each answers remote control under its own node name (both are on this machine).
    from benchgen.jobs.broker import celery_app

    settings = world.rt.settings.model_copy(update={"broker_url": redis_url})
    replies = celery_app(settings).control.ping(timeout=2)
    names = [name for reply in replies for name in reply]
    assert len(names) == 2 and len(set(names)) == 2, names


@pytest.mark.parametrize("backend", ["sqlite"])
def test_a_lost_message_is_sent_again_by_the_sweeper(
    world: World, redis_url: str, workers: Any
) -> None:
    run_ids = _runs(world, 3, None)  # queued with no broker: no message exists
    workers(redis_url, sweep_s=1)
    _wait_done(world, run_ids, 120)
    assert _results_per_run(world, run_ids) == {len(MCQ["questions"])}


@pytest.mark.parametrize("backend", ["sqlite"])
def test_rabbitmq_carries_runs_too(world: World, workers: Any) -> None:
    _require(RABBITMQ, "RabbitMQ")
    url = f"amqp://guest:guest@{RABBITMQ[0]}:{RABBITMQ[1]}//"
    workers(url)
    run_ids = _runs(world, 4, url)
    _wait_done(world, run_ids, 120)
    assert _results_per_run(world, run_ids) == {len(MCQ["questions"])}


@pytest.mark.parametrize("backend", ["sqlite"])
def test_a_worker_takes_only_its_queues(world: World, workers: Any) -> None:
    training_only = workers(None, queues="training")
    run_ids = _runs(world, 2, None)
    time.sleep(3)
    assert training_only.poll() is None  # alive, and still polling
    assert set(_statuses(world, run_ids)) == {"queued"}
    workers(None, queues="runs,scoring")
    _wait_done(world, run_ids, 60)


def test_messages_are_json_only(world: World) -> None:
    from benchgen.jobs.broker import celery_app

    settings = world.rt.settings.model_copy(update={"broker_url": "redis://127.0.0.1:6379/13"})
    conf = celery_app(settings).conf
    assert conf.accept_content == ["json"] and conf.task_serializer == "json"
    assert conf.task_acks_late and conf.task_reject_on_worker_lost
    # Longer than the longest training job: Redis must not hand a running job to another.
    assert conf.broker_transport_options["visibility_timeout"] > 24 * 3600


def test_an_unknown_queue_is_refused() -> None:
    done = subprocess.run(  # noqa: S603
        [str(Path(sys.executable).parent / "benchgen"), "worker", "--queues", "gpu"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "unknown queue gpu" in done.stderr
