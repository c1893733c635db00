"""The queue under one user's backlog: claims stay quick and re-judging takes a slot; the
broker's sweeper sends again only what can start, so another user's lost message, or a training
worker's own job, is not hidden behind the backlog, and not every sweep a backlog still waiting."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import insert

from benchgen.core.clock import ManualClock
from benchgen.db.tables import Job
from benchgen.jobs.broker import Resends
from benchgen.jobs.handlers import WORKER
from benchgen.services import _enqueue, queue
from benchgen.services.runtime import Runtime, transaction
from tests.services.test_fair_workers import launch_runs, run_row, set_slots
from tests.support import OPERATOR, World

pytestmark = pytest.mark.both_backends  # the claim query: slot counts, row locks, plans

WAITED = timedelta(seconds=10)


def test_the_sweep_skips_jobs_waiting_for_their_users_slot(
    world: World, runtime: Runtime, clock: ManualClock
) -> None:
    """Ana's waiting runs filled every sweep (500, oldest first): Bob's run, whose message was
    lost, was never sent again while her backlog lasted, nor a training worker's job."""
    set_slots(runtime, 1)
    ana, bob = world.user("ana@example.com"), world.user("bob@example.com")
    anas = [run_row(world, run)[1] for run in launch_runs(world, clock, ana, 3)]
    (bobs,) = [run_row(world, run)[1] for run in launch_runs(world, clock, bob, 1)]
    with transaction(runtime, OPERATOR) as ctx:
        training = _enqueue.enqueue(ctx, "training", {"training_job_id": "tr_x"}, user_id=ana)
    with transaction(runtime, WORKER) as ctx:
        assert queue.claim(ctx, "w", timedelta(hours=1), job_id=anas[0]) is not None
    clock.advance(seconds=30)
    with transaction(runtime, WORKER, write=False) as ctx:
        assert queue.overdue_jobs(ctx, WAITED, limit=2) == [(bobs, "run"), (training, "training")]
        assert queue.overdue_jobs(ctx, WAITED, frozenset({"training"}), limit=1) == [
            (training, "training")
        ]
    with transaction(runtime, WORKER) as ctx:
        queue.finish(ctx, anas[0], "w")  # her slot is free: her next run is sent if lost
    with transaction(runtime, WORKER, write=False) as ctx:
        assert [job for job, _ in queue.overdue_jobs(ctx, WAITED, frozenset({"run"}))] == [
            *anas[1:],
            bobs,
        ]


def test_a_job_that_stays_late_is_sent_again_less_and_less_often() -> None:
    """Sent again at every sweep by every worker process, a backlog waiting in the broker's
    queue (not lost) added itself to the queue each sweep, for as long as it lasted."""
    resends = Resends(period_s=10)
    sent: list[tuple[int, str]] = []
    for sweep in range(24):  # one sweep every 10 s, a little late, as `Event.wait` is
        now = sweep * 10.01
        late = [("job_a", "run")] + ([("job_b", "run")] if sweep in (5, 20) else [])
        for job_id, _ in resends.due(late, now):
            resends.record(job_id, now)
            sent.append((sweep, job_id))
    # job_a: 1, 2, 4, then 8 sweeps apart; job_b, late again after it was claimed: at once.
    assert sent == [
        (0, "job_a"),
        (1, "job_a"),
        (3, "job_a"),
        (5, "job_b"),
        (7, "job_a"),
        (15, "job_a"),
        (20, "job_b"),
        (23, "job_a"),
    ]
    assert set(resends.sent) == {"job_a"}  # what is no longer late is forgotten


def test_judging_done_again_takes_its_users_slots(
    world: World, runtime: Runtime, clock: ManualClock
) -> None:
    """Ana's many re-judgings took no slot: every worker judged hers while Bob's run waited."""
    set_slots(runtime, 1)
    ana, bob = world.user("ana@example.com"), world.user("bob@example.com")
    anas = []
    for run_id in ("run_a", "run_b"):
        with transaction(runtime, OPERATOR) as ctx:
            anas.append(_enqueue.enqueue(ctx, "rejudge", {"run_id": run_id}, user_id=ana))
        clock.advance(seconds=1)
    (bobs,) = [run_row(world, run)[1] for run in launch_runs(world, clock, bob, 1)]
    claimed = []
    for worker in ("w0", "w1", "w2"):
        with transaction(runtime, WORKER) as ctx:
            job = queue.claim(ctx, worker, timedelta(minutes=5))
        claimed.append(job.id if job else None)
    assert claimed == [anas[0], bobs, None]  # her second waits for her slot


def test_one_users_thousands_of_queued_runs_wait_for_her_slot_and_are_not_overdue(
    world: World, runtime: Runtime, clock: ManualClock
) -> None:
    """The slot count is one grouped count, not one per due job (5,000 runs queued by one user
    made each claim and each sweep take 2 to 4 s on PostgreSQL; tests assert no timings)."""
    set_slots(runtime, 1)
    ana = world.user("ana@example.com")
    now = clock.now()
    rows = [
        {"id": f"job_{n:05d}", "kind": "run", "user_id": ana, "payload": {}, "status": "queued"}
        | {"attempts": 0, "run_after": now, "created_at": now, "updated_at": now}
        for n in range(5000)
    ]
    with transaction(runtime, OPERATOR) as ctx:
        ctx.session.execute(insert(Job), rows)
    with transaction(runtime, WORKER) as ctx:
        assert queue.claim(ctx, "w", timedelta(minutes=5)) is not None  # her one slot
    clock.advance(seconds=30)
    with transaction(runtime, WORKER) as ctx:
        assert queue.claim(ctx, "w2", timedelta(minutes=5)) is None  # all hers, all waiting
    with transaction(runtime, WORKER, write=False) as ctx:
        assert queue.overdue_jobs(ctx, WAITED) == []
