"""Fair workers: a per-user cap on executing jobs, kept in the claim query (so across
processes), claims that serve users in turn, and lease recovery that still works."""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import select

from benchgen.core.clock import ManualClock
from benchgen.core.config import Settings
from benchgen.core.context import Principal
from benchgen.db.tables import Job, Run
from benchgen.jobs.handlers import WORKER
from benchgen.jobs.worker import Worker
from benchgen.services import _enqueue, queue
from benchgen.services.queue import Claimed
from benchgen.services.runs import launch
from benchgen.services.runtime import Runtime, transaction
from tests.support import MCQ, OPERATOR, World

pytestmark = pytest.mark.both_backends  # the claim query (FOR UPDATE SKIP LOCKED) and racing claims

FREE_MODEL = "mdl_builtin_first"
LEASE = timedelta(seconds=60)


def launch_runs(world: World, clock: ManualClock, user_id: str, count: int) -> list[str]:
    """`count` runs on the user's own benchmark, one second apart (so their order is known)."""
    benchmark = world.benchmark(user_id, MCQ)
    launched = []
    for _ in range(count):
        launched.append(
            world.do(Principal.web(user_id), launch.start_run, benchmark, FREE_MODEL).id
        )
        clock.advance(seconds=1)
    return launched


def claim(runtime: Runtime, worker: str, lease: timedelta = LEASE) -> Claimed | None:
    with transaction(runtime, WORKER) as ctx:
        return queue.claim(ctx, worker, lease)


def claimed_run(job: Claimed | None) -> str | None:
    return None if job is None else str(job.payload["run_id"])


def run_row(world: World, run_id: str) -> tuple[str, str]:
    """The run's status and its job's id, read from the tables."""

    def read(ctx: Any) -> tuple[str, str]:
        run = ctx.session.get(Run, run_id)
        return run.status, run.job_id

    return world.ctx_call(OPERATOR, read)


def run_status(world: World, run_id: str) -> str:
    return run_row(world, run_id)[0]


def set_slots(runtime: Runtime, slots: int | None) -> None:
    runtime.settings = runtime.settings.model_copy(update={"user_run_slots": slots})


def test_slots_default_to_half_the_worker_threads() -> None:
    assert queue.user_slots(Settings(worker_threads=0)) == 1
    assert queue.user_slots(Settings(worker_threads=2)) == 1
    assert queue.user_slots(Settings(worker_threads=5)) == 2
    assert queue.user_slots(Settings(worker_threads=8)) == 4
    assert queue.user_slots(Settings(worker_threads=8, user_run_slots=7)) == 7


def test_jobs_know_whom_they_work_for(world: World, clock: ManualClock) -> None:
    ana = world.user("ana@example.com")
    (run_id,) = launch_runs(world, clock, ana, 1)
    owners = world.ctx_call(OPERATOR, lambda ctx: list(ctx.session.scalars(select(Job.user_id))))
    assert owners == [ana]
    assert claimed_run(claim(world.rt, "w")) == run_id


def test_another_users_run_starts_while_one_user_holds_the_cap(
    world: World, runtime: Runtime, clock: ManualClock
) -> None:
    ana, bob = world.user("ana@example.com"), world.user("bob@example.com")
    anas = launch_runs(world, clock, ana, 4)
    # A worker in another process takes Ana's oldest run and works on it for hours.
    assert claimed_run(claim(runtime, "slow-worker", timedelta(hours=3))) == anas[0]
    (bobs,) = launch_runs(world, clock, bob, 1)

    # Ana already holds her one slot: Bob's newer run goes first, and runs to the end.
    assert Worker(runtime).run_once()
    assert run_status(world, bobs) == "completed"
    assert [run_status(world, run_id) for run_id in anas] == ["queued"] * 4
    # Ana's other three wait for her slot, although a worker is free.
    assert not Worker(runtime).run_once()

    # Her slot frees when the slow run ends; then her next run is taken.
    with transaction(runtime, WORKER) as ctx:
        queue.finish(ctx, run_row(world, anas[0])[1], "slow-worker")
    assert claimed_run(claim(runtime, "w2")) == anas[1]
    assert claim(runtime, "w3") is None


def test_claims_serve_users_in_turn(world: World, runtime: Runtime, clock: ManualClock) -> None:
    set_slots(runtime, 3)  # the cap is not what decides here: the order is
    ana, bob = world.user("ana@example.com"), world.user("bob@example.com")
    anas = launch_runs(world, clock, ana, 3)
    (bobs,) = launch_runs(world, clock, bob, 1)
    order = [claimed_run(claim(runtime, f"w{n}")) for n in range(5)]
    # Oldest first would give Ana's three before Bob's one.
    assert order == [anas[0], bobs, anas[1], anas[2], None]


def test_an_expired_lease_frees_the_slot_and_the_job_is_resumed(
    world: World, runtime: Runtime, clock: ManualClock
) -> None:
    ana = world.user("ana@example.com")
    anas = launch_runs(world, clock, ana, 2)
    assert claimed_run(claim(runtime, "dead-worker")) == anas[0]
    assert claim(runtime, "w") is None, "the live lease holds Ana's slot"
    clock.advance(seconds=61)
    # The crashed worker's job is taken over first (it is the oldest), not a second one of hers.
    taken = claim(runtime, "w")
    assert claimed_run(taken) == anas[0] and taken is not None and taken.attempt == 2
    assert claim(runtime, "w") is None


def test_a_job_out_of_attempts_is_given_up_despite_the_cap(
    world: World, runtime: Runtime, clock: ManualClock
) -> None:
    ana = world.user("ana@example.com")
    anas = launch_runs(world, clock, ana, 2)
    set_slots(runtime, 2)
    for attempt in range(3):  # every worker holding the first run dies
        assert claimed_run(claim(runtime, "doomed")) == anas[0]
        if attempt < 2:
            clock.advance(seconds=61)
    assert claimed_run(claim(runtime, "holder", timedelta(hours=1))) == anas[1]
    clock.advance(seconds=61)
    set_slots(runtime, 1)  # Ana's live second run fills her slot
    # Recording the failure (and refunding) is not work that waits for a slot.
    last = claim(runtime, "w")
    assert claimed_run(last) == anas[0] and last is not None and last.exhausted


@pytest.mark.parametrize("claimers", [6])
def test_concurrent_claims_cannot_overshoot_the_cap(
    world: World, runtime: Runtime, clock: ManualClock, claimers: int
) -> None:
    ana, bob = world.user("ana@example.com"), world.user("bob@example.com")
    anas = launch_runs(world, clock, ana, 3)
    bobs = launch_runs(world, clock, bob, 1)
    gate = threading.Barrier(claimers)
    outcomes: list[Any] = []
    lock = threading.Lock()

    def attempt(index: int) -> None:
        gate.wait()
        try:
            result: Any = claimed_run(claim(runtime, f"process-{index}"))
        except Exception as exc:
            result = exc
        with lock:
            outcomes.append(result)

    threads = [threading.Thread(target=attempt, args=(n,)) for n in range(claimers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert len(outcomes) == claimers
    assert [o for o in outcomes if isinstance(o, Exception)] == []
    # One more claim, in case a claimer lost its race and left Bob's run for later.
    taken = [o for o in [*outcomes, claimed_run(claim(runtime, "late"))] if o is not None]
    assert len([o for o in taken if o in anas]) == 1, taken
    assert [o for o in taken if o in bobs] == bobs


def test_a_users_training_job_takes_none_of_their_run_slots(
    world: World, runtime: Runtime, clock: ManualClock
) -> None:
    """Training lasts hours and has its own limit (the compute pools): holding the owner's one
    slot, it kept every run of theirs queued, unexplained, until it ended."""
    ana = world.user("ana@example.com")
    set_slots(runtime, 1)
    with transaction(runtime, OPERATOR) as ctx:
        training = _enqueue.enqueue(ctx, "training", {"training_job_id": "tr_x"}, user_id=ana)
    clock.advance(seconds=1)
    (run_id,) = launch_runs(world, clock, ana, 1)
    with transaction(runtime, WORKER) as ctx:
        held = queue.claim(ctx, "trainer", timedelta(hours=3), frozenset({"training"}))
    assert held is not None and held.id == training
    assert claimed_run(claim(runtime, "w")) == run_id  # the run starts beside the training
    # A second run waits for the first, as before; and the training's end sends no run.
    (second,) = launch_runs(world, clock, ana, 1)
    assert claim(runtime, "w2") is None
    first_job, second_job = run_row(world, run_id)[1], run_row(world, second)[1]
    with transaction(runtime, WORKER) as ctx:
        assert queue.next_for_user(ctx, training) is None
        assert queue.next_for_user(ctx, first_job) == (second_job, "run")
