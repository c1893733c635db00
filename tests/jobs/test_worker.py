"""The worker loop outlives a busy database: it claims again, and its heartbeat skips a beat."""

from __future__ import annotations

import threading
import time
from datetime import timedelta
from typing import Any

import pytest

from benchgen.core.context import Principal
from benchgen.core.errors import Unavailable
from benchgen.jobs import worker as worker_module
from benchgen.jobs.worker import Worker, _Heartbeat
from benchgen.services import queue
from benchgen.services.queue import Claimed
from benchgen.services.runs import launch
from benchgen.services.runtime import Runtime
from tests.support import MCQ, World

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
    working = Worker(runtime, poll_s=0.01)
    thread = threading.Thread(target=working.run_forever, daemon=True)
    thread.start()
    try:
        assert second.wait(5), "the worker stopped claiming after a busy database"
        assert thread.is_alive()
    finally:
        working.stop()
        thread.join(5)


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
    working = Worker(runtime, poll_s=60)  # a poll would come far too late for this test
    thread = threading.Thread(target=working.run_forever, daemon=True)
    thread.start()
    try:
        assert idle.wait(10), "the worker never went idle"
        run_id = world.do(web, launch.start_run, benchmark, FIRST).id
        deadline = time.monotonic() + 20
        while world.do(web, launch.get_run, run_id).status != "completed":
            assert time.monotonic() < deadline, "the worker slept until its next poll"
            time.sleep(0.05)
    finally:
        working.stop()  # wakes it too: stopping takes no poll interval either
        thread.join(20)
    assert not thread.is_alive()
