"""A job a stopping worker gives back keeps its place in the queue: the run it left half-done is
the next of its user's to resume, not the last."""

from __future__ import annotations

from datetime import timedelta

import pytest

from benchgen.core.clock import ManualClock
from benchgen.jobs.handlers import WORKER
from benchgen.jobs.worker import Worker
from benchgen.services import queue
from benchgen.services.runtime import Runtime, transaction
from tests.services.test_fair_workers import launch_runs, run_row, set_slots
from tests.support import World

pytestmark = pytest.mark.both_backends  # the claim's order


def test_a_job_handed_back_is_resumed_before_its_users_later_runs(
    world: World, runtime: Runtime, clock: ManualClock
) -> None:
    """Given back with `run_after` set to the moment the worker stopped, Ana's half-done run
    went behind every run she had queued after it: it stayed "running", untouched, until all
    of them had run."""
    set_slots(runtime, 1)
    ana = world.user("ana@example.com")
    first, *later = [run_row(world, run)[1] for run in launch_runs(world, clock, ana, 3)]
    stopping = Worker(runtime)
    with transaction(runtime, WORKER) as ctx:
        stopping.job = queue.claim(ctx, stopping.name, timedelta(minutes=1))
    assert stopping.job is not None and stopping.job.id == first
    clock.advance(seconds=30)
    stopping.hand_back()
    with transaction(runtime, WORKER) as ctx:
        resumed = queue.claim(ctx, "restarted", timedelta(minutes=1))
    assert resumed is not None and resumed.id == first, later
