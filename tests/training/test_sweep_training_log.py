"""A training job's log as its owner reads it: rows that training skips are counted there even
when the steps stay as many."""

from __future__ import annotations

from pathlib import Path

from benchgen.jobs.handlers import WORKER
from benchgen.services.training import execution, jobs
from tests.support import World
from tests.training.header_base import header_request


def test_skipped_rows_are_counted_in_the_log_whatever_the_steps(
    world: World, tmp_path: Path
) -> None:
    """Ten rows in batches of four are three steps, and still three with one row skipped:
    the log, which the docs say counts the skipped rows, said nothing of it."""
    ana, request = header_request(world, tmp_path / "tiny", 10, batch_size=4)
    job = world.do(ana, jobs.start_training, request)
    assert job.total_steps == 3
    started = {"event": "started", "total_steps": 3, "skipped_rows": 1, "start_step": 0}
    world.do(WORKER, execution.record_events, job.id, [started])
    lines = [line.line for line in world.do(ana, jobs.read_training_log, job.id)]
    assert "1 row skipped past max_seq_length: 3 steps" in lines
    fewer = started | {"total_steps": 2, "skipped_rows": 3}  # more skipped: fewer steps
    world.do(WORKER, execution.record_events, job.id, [fewer])
    lines = [line.line for line in world.do(ana, jobs.read_training_log, job.id)]
    assert "3 rows skipped past max_seq_length: 2 steps" in lines
    assert world.do(ana, jobs.get_training_job, job.id).total_steps == 2


def test_a_job_cancelled_while_its_worker_was_lost_says_how_far_it_got(
    world: World, tmp_path: Path
) -> None:
    """A job whose worker died after two steps, cancelled before another worker took it over,
    ended "Cancelled before it started" while it was charged for its two steps."""
    ana, request = header_request(world, tmp_path / "tiny", 10, batch_size=2)
    job = world.do(ana, jobs.start_training, request)
    work = world.do(WORKER, execution.begin_training, job.id, tmp_path / "first")
    assert isinstance(work, execution.Work)
    steps = [{"event": "step", "step": step, "loss": 1.0} for step in (1, 2)]
    world.do(WORKER, execution.record_events, job.id, steps)  # and then its worker died
    world.do(ana, jobs.cancel_training_job, job.id)
    assert world.do(WORKER, execution.begin_training, job.id, tmp_path / "second") is None
    ended = world.do(ana, jobs.get_training_job, job.id)
    assert (ended.status, ended.steps_done, ended.credits_charged) == ("cancelled", 2, 2)
    lines = [line.line for line in world.do(ana, jobs.read_training_log, job.id)]
    assert lines[-1] == "Cancelled after 2 steps"
