"""A broker's message is a turn to claim the job its queue serves next, in the same fair order as
polling workers: one user's flood of messages ahead of another user's does not hold that user's
run back, and every job still runs once."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import func, select

from benchgen.core.context import Principal
from benchgen.db.tables import Run, RunResult
from benchgen.jobs.broker import handle_message
from benchgen.jobs.handlers import WORKER
from benchgen.services import _enqueue, queue
from benchgen.services.runs import launch
from benchgen.services.runtime import Runtime, transaction
from tests.jobs.test_broker_messages import Sent
from tests.support import MCQ, OPERATOR, World

pytestmark = pytest.mark.both_backends  # the claim query: slot counts, row locks, order

FIRST = "mdl_builtin_first"
RUNS = frozenset({"run", "rejudge"})


def _launch(world: World, user: str, count: int) -> tuple[list[str], list[str]]:
    """`count` runs of `user`, and their jobs' ids, in the order their messages were sent."""
    benchmark = world.benchmark(user, MCQ)
    runs = [
        world.do(Principal.web(user), launch.start_run, benchmark, FIRST).id for _ in range(count)
    ]
    jobs = [world.ctx_call(WORKER, lambda ctx, r=r: ctx.session.get(Run, r).job_id) for r in runs]
    return runs, jobs


def _status(world: World, run_id: str) -> str:
    return str(world.ctx_call(OPERATOR, lambda ctx: ctx.session.get(Run, run_id).status))


def test_one_users_earlier_messages_do_not_hold_back_another_users_run(
    world: World, runtime: Runtime
) -> None:
    """Each message claimed only its own job: with as many worker threads as one user's slots,
    every thread freed by Ana took her next message, and Bob's one run, sent after her 200,
    waited for all of them to finish."""
    runtime.settings = runtime.settings.model_copy(update={"user_run_slots": 2})
    ana, bob = world.user("ana@example.com"), world.user("bob@example.com")
    anas, ana_jobs = _launch(world, ana, 3)
    for job_id in ana_jobs[:2]:  # both threads took her first two messages
        with transaction(runtime, WORKER) as ctx:
            assert queue.claim(ctx, "elsewhere", timedelta(minutes=5), job_id=job_id)
    with transaction(runtime, WORKER) as ctx:
        queue.finish(ctx, ana_jobs[0], "elsewhere")  # one thread is free for the next message
    (bobs,), (bob_job,) = _launch(world, bob, 1)  # his message is sent after hers
    sent = Sent()
    handle_message(runtime, RUNS, sent, ana_jobs[2])  # type: ignore[arg-type]
    assert (_status(world, bobs), _status(world, anas[2])) == ("completed", "queued")
    assert sent.messages == []  # Bob has nothing more waiting
    handle_message(runtime, RUNS, sent, bob_job)  # type: ignore[arg-type]  # runs Ana's, in turn
    assert _status(world, anas[2]) == "completed"


def test_a_message_delivered_again_runs_nothing_twice(world: World, runtime: Runtime) -> None:
    """A turn taken by nothing once its own job ran and nothing else waits."""
    (run_id,), (job_id,) = _launch(world, world.user("ana@example.com"), 1)
    sent = Sent()
    for _ in range(2):
        handle_message(runtime, RUNS, sent, job_id)  # type: ignore[arg-type]
    assert _status(world, run_id) == "completed" and sent.messages == []

    def results(ctx: Any) -> int:
        return int(ctx.session.scalar(select(func.count()).where(RunResult.run_id == run_id)))

    assert world.ctx_call(OPERATOR, results) == len(MCQ["questions"])


def test_a_message_is_a_turn_in_its_own_queue_only(world: World, runtime: Runtime) -> None:
    """A run's message waiting for its user's slot takes no training job (that takes no slot):
    training is for the machines that consume the training queue."""
    runtime.settings = runtime.settings.model_copy(update={"user_run_slots": 1})
    ana = world.user("ana@example.com")
    with transaction(runtime, OPERATOR) as ctx:
        _enqueue.enqueue(ctx, "training", {"training_job_id": "tr_x"}, user_id=ana)
    _, jobs = _launch(world, ana, 2)
    with transaction(runtime, WORKER) as ctx:
        assert queue.claim(ctx, "elsewhere", timedelta(minutes=5), job_id=jobs[0])
    with transaction(runtime, WORKER) as ctx:
        assert queue.claim(ctx, "w", timedelta(minutes=5), job_id=jobs[1]) is None
