"""A job taken over from a worker that died holding it says so in the worker's log: what was
taken over, from which worker, and whether it resumes or is given up."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest
from sqlalchemy import select

from benchgen.core.clock import ManualClock
from benchgen.core.context import Principal
from benchgen.db.tables import Job, Run, RunLogLine
from benchgen.jobs.handlers import WORKER
from benchgen.jobs.worker import Worker
from benchgen.services import queue
from benchgen.services.runs import launch
from benchgen.services.runtime import Runtime, transaction
from tests.support import MCQ, OPERATOR, World

FIRST = "mdl_builtin_first"


def _dead_workers_run(world: World, runtime: Runtime, clock: ManualClock) -> tuple[str, str]:
    """A run whose job a worker claimed and then died holding (its lease ran out)."""
    ana = world.user("ana@example.com")
    run = world.do(Principal.web(ana), launch.start_run, world.benchmark(ana, MCQ), FIRST)
    with transaction(runtime, WORKER) as ctx:
        held = queue.claim(ctx, "gpu-box:4242:w_dead", timedelta(seconds=60))
    assert held is not None
    clock.advance(seconds=61)
    return run.id, held.id


def _logged(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "benchgen.jobs.worker"]


@pytest.mark.parametrize("backend", ["sqlite"])  # no SQL behaviour differs here
def test_a_job_taken_over_from_a_dead_worker_is_logged(
    world: World, runtime: Runtime, clock: ManualClock, caplog: pytest.LogCaptureFixture
) -> None:
    """A worker killed mid-run left no trace in any worker's log: its run just took longer."""
    run_id, job_id = _dead_workers_run(world, runtime, clock)
    with caplog.at_level(logging.WARNING, logger="benchgen.jobs.worker"):
        assert Worker(runtime).run_once()
    assert _logged(caplog) == [
        f"job {job_id}: worker gpu-box:4242:w_dead stopped answering (its lease ran out); "
        "taking it over (attempt 2)"
    ]

    def lines(ctx: object) -> list[str]:
        query = select(RunLogLine.line).where(RunLogLine.run_id == run_id)
        return list(ctx.session.scalars(query))  # type: ignore[attr-defined]

    assert "Started: 2 questions" in world.ctx_call(OPERATOR, lines)
    assert world.ctx_call(OPERATOR, lambda ctx: ctx.session.get(Run, run_id).status) == "completed"


@pytest.mark.parametrize("backend", ["sqlite"])
def test_a_job_given_up_after_its_workers_kept_dying_is_logged(
    world: World, runtime: Runtime, clock: ManualClock, caplog: pytest.LogCaptureFixture
) -> None:
    run_id, job_id = _dead_workers_run(world, runtime, clock)

    def last_attempt(ctx: object) -> None:
        ctx.session.get(Job, job_id).attempts = 3  # type: ignore[attr-defined]

    world.ctx_call(OPERATOR, last_attempt)
    with caplog.at_level(logging.WARNING, logger="benchgen.jobs.worker"):
        assert Worker(runtime).run_once()
    assert _logged(caplog) == [
        f"job {job_id}: worker gpu-box:4242:w_dead stopped answering (its lease ran out); "
        "its attempts ran out: giving it up"
    ]
    assert world.ctx_call(OPERATOR, lambda ctx: ctx.session.get(Run, run_id).status) == "failed"
