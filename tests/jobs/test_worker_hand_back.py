"""Workers stopped while a job is still in hand give it back to the queue, its attempt not
counted, rather than holding it until its lease runs out."""

from __future__ import annotations

import threading

import pytest

from benchgen.core.context import Principal
from benchgen.db.tables import Job
from benchgen.jobs import handlers
from benchgen.jobs.worker import start_workers, stop_workers
from benchgen.services.queue import Claimed
from benchgen.services.runs import launch
from benchgen.services.runtime import Runtime
from tests.support import MCQ, OPERATOR, World

FIRST = "mdl_builtin_first"


@pytest.mark.parametrize("backend", ["sqlite"])  # no SQL behaviour differs here
def test_a_job_still_in_hand_when_workers_stop_goes_back_to_the_queue(
    world: World, runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    in_hand: list[str] = []
    taken, told_to_stop = threading.Event(), threading.Event()

    def long_run(_: Runtime, job: Claimed) -> None:
        # Longer than the stop's wait: it ends only once told the job is no longer its own.
        in_hand.append(job.id)
        taken.set()
        if job.lease_lost.wait(30):
            told_to_stop.set()

    slow = handlers.Handler(long_run, handlers.HANDLERS["run"].give_up)
    monkeypatch.setitem(handlers.HANDLERS, "run", slow)
    ana = world.user("ana@example.com", credits_=100)
    world.do(Principal.web(ana), launch.start_run, world.benchmark(ana, MCQ), FIRST)
    started = start_workers(runtime, 1)
    assert taken.wait(10), "the worker never took the run's job"
    stop_workers(started, timeout_s=0.2)
    assert told_to_stop.wait(5), "the handler was not told to stop"
    job = world.ctx_call(OPERATOR, lambda ctx: ctx.session.get(Job, in_hand[0]))
    assert (job.status, job.attempts, job.lease_owner) == ("queued", 0, None)
