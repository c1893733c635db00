"""The worker loop outlives a busy database: it claims again, and its heartbeat skips a beat; a
failure is recorded in words its run's viewers may read."""

from __future__ import annotations

import threading
import time
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import exc as sa_exc
from sqlalchemy import update

from benchgen.core.clock import ManualClock
from benchgen.core.context import Principal
from benchgen.core.errors import Unavailable
from benchgen.db.tables import Job, Run
from benchgen.jobs import handlers
from benchgen.jobs import worker as worker_module
from benchgen.jobs.handlers import WORKER
from benchgen.jobs.worker import Worker, _Heartbeat
from benchgen.services import queue
from benchgen.services.queue import Claimed
from benchgen.services.runs import launch
from benchgen.services.runtime import Runtime, transaction
from tests.support import MCQ, OPERATOR, World, looping

FIRST = "mdl_builtin_first"


@pytest.mark.parametrize("backend", ["sqlite"])  # no SQL behaviour differs here
def test_a_busy_claim_does_not_end_the_worker(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []
    second = threading.Event()

    def claim(*args: Any, **kwargs: Any) -> None:
        calls.append(1)
        if len(calls) == 1:
            raise Unavailable("The database is busy.")
        second.set()
        return None

    monkeypatch.setattr(queue, "claim", claim)
    with looping(Worker(runtime, poll_s=0.01), join_s=5) as thread:
        assert second.wait(5), "the worker stopped claiming after a busy database"
        assert thread.is_alive()


@pytest.mark.parametrize("backend", ["sqlite"])
def test_a_busy_heartbeat_skips_one_beat(runtime: Runtime, monkeypatch: pytest.MonkeyPatch) -> None:
    beats: list[int] = []
    third = threading.Event()

    def heartbeat(*args: Any, **kwargs: Any) -> bool:
        beats.append(1)
        if len(beats) == 1:
            raise Unavailable("The database is busy.")
        if len(beats) == 3:
            third.set()
        return True

    monkeypatch.setattr(worker_module.queue, "heartbeat", heartbeat)
    working = Worker(runtime, lease=timedelta(milliseconds=30))
    job = Claimed("job_x", "run", {}, 1, False)
    with _Heartbeat(working, job):
        assert third.wait(5), "the heartbeat stopped after a busy database"


@pytest.mark.parametrize("backend", ["sqlite"])
def test_a_run_launched_in_this_process_wakes_an_idle_worker(
    world: World, runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    ana = world.user("ana@example.com")
    web = Principal.web(ana)
    benchmark = world.benchmark(ana, MCQ)
    idle = threading.Event()
    wait = queue.wait_for_work

    def waiting(timeout_s: float) -> None:
        idle.set()
        wait(timeout_s)

    monkeypatch.setattr(queue, "wait_for_work", waiting)
    # A poll would come far too late for this test; stopping wakes it too.
    with looping(Worker(runtime, poll_s=60), join_s=20) as thread:
        assert idle.wait(10), "the worker never went idle"
        run_id = world.do(web, launch.start_run, benchmark, FIRST).id
        deadline = time.monotonic() + 20
        while world.do(web, launch.get_run, run_id).status != "completed":
            assert time.monotonic() < deadline, "the worker slept until its next poll"
            time.sleep(0.05)
    assert not thread.is_alive()


def _run_row(world: World, run_id: str) -> tuple[str, str]:
    row = world.ctx_call(OPERATOR, lambda ctx: ctx.session.get(Run, run_id))
    return row.status, row.error


def _claimed_run(world: World, runtime: Runtime, worker: Worker) -> tuple[str, Claimed]:
    ana = world.user("ana@example.com", credits_=100)
    run_id = world.do(Principal.web(ana), launch.start_run, world.benchmark(ana, MCQ), FIRST).id
    with transaction(runtime, WORKER) as ctx:
        job = queue.claim(ctx, worker.name, worker.lease)
    assert job is not None and job.payload["run_id"] == run_id
    return run_id, job


@pytest.mark.parametrize("backend", ["sqlite"])
def test_a_worker_that_lost_its_lease_leaves_the_run_to_the_one_that_took_it(
    world: World, runtime: Runtime, clock: ManualClock
) -> None:
    """A stalled worker woke, failed on answers the other had recorded, and failed and refunded
    the run the other was finishing."""
    stalled = Worker(runtime, lease=timedelta(seconds=15))
    run_id, job = _claimed_run(world, runtime, stalled)
    with transaction(runtime, WORKER) as ctx:
        handlers.execution.begin_run(ctx, run_id)
    clock.advance(seconds=20)  # its lease ran out: another worker takes the job over
    with transaction(runtime, WORKER) as ctx:
        assert queue.claim(ctx, "the-other-worker", timedelta(seconds=15)) is not None
    stalled._after_failure(job, "IntegrityError: duplicate key value")
    assert _run_row(world, run_id) == ("running", "")
    with transaction(runtime, WORKER) as ctx:
        assert queue.holds(ctx, job.id, "the-other-worker")


@pytest.mark.parametrize("backend", ["sqlite"])
def test_a_heartbeat_that_finds_the_job_taken_over_stops_the_work_unrecorded(
    world: World, runtime: Runtime
) -> None:
    stalled = Worker(runtime, lease=timedelta(milliseconds=60))
    run_id, job = _claimed_run(world, runtime, stalled)

    def taken(ctx: Any) -> None:
        ctx.session.execute(update(Job).where(Job.id == job.id).values(lease_owner="other"))

    world.ctx_call(OPERATOR, taken)
    with _Heartbeat(stalled, job):
        assert job.lease_lost.wait(5), "the heartbeat never noticed"
    handlers.execute_run(runtime, job)  # stops at once, and closes nothing
    assert _run_row(world, run_id)[0] in ("queued", "running")


@pytest.mark.parametrize("backend", ["sqlite"])
def test_a_database_error_is_recorded_without_its_statement_or_rows(
    world: World, runtime: Runtime, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLAlchemy's text quotes the statement and the rows being written, which the run's
    viewers read as its error: only the database's own first line is kept."""

    def fail(runtime: Runtime, job: Claimed) -> None:
        statement = "INSERT INTO run_results (raw) VALUES (?)"
        cause = ValueError("value too long for type character varying(16)\nDETAIL: the row")
        raise sa_exc.DataError(statement, {"raw": "Ana's private reply"}, cause)

    monkeypatch.setitem(handlers.HANDLERS, "run", handlers.Handler(fail, handlers.abandon_run))
    worker = Worker(runtime, lease=timedelta(seconds=60))
    ana = world.user("ana@example.com", credits_=100)
    run_id = world.do(Principal.web(ana), launch.start_run, world.benchmark(ana, MCQ), FIRST).id
    while _run_row(world, run_id)[0] != "failed":
        assert worker.run_once(), "the job was never given up"
        clock.advance(minutes=10)  # past each retry's wait
    error = _run_row(world, run_id)[1]
    assert error == "ValueError: value too long for type character varying(16)"
