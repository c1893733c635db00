"""What a broker message does with its job, without a broker: a job waiting for its user's
slot is not sent again by its own message, and the job that frees the slot sends it."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from benchgen.core.context import Principal
from benchgen.db.tables import Run
from benchgen.jobs.broker import handle_message
from benchgen.jobs.handlers import WORKER
from benchgen.services import queue
from benchgen.services.runs import launch
from benchgen.services.runtime import Runtime, transaction
from tests.support import MCQ, World

FIRST = "mdl_builtin_first"


class Sent:
    """A dispatch that only records what it was asked to send."""

    def __init__(self) -> None:
        self.messages: list[tuple[Any, ...]] = []

    def __call__(self, job_id: str, kind: str, countdown: float | None = None) -> None:
        self.messages.append((job_id, kind, countdown))


def test_a_message_for_a_job_waiting_on_its_users_slot_dies_and_the_freed_slot_sends_it(
    world: World, runtime: Runtime
) -> None:
    """Each such message came back every second and each sweep added one: messages and claims
    grew for as long as the backlog waited (171 messages for 7 waiting jobs in 2.5 minutes)."""
    runtime.settings = runtime.settings.model_copy(update={"user_run_slots": 1})
    ana = world.user("ana@example.com")
    bm = world.benchmark(ana, MCQ)
    web = Principal.web(ana)
    runs = [world.do(web, launch.start_run, bm, FIRST).id for _ in range(3)]
    jobs = [world.ctx_call(WORKER, lambda ctx, r=r: ctx.session.get(Run, r).job_id) for r in runs]
    with transaction(runtime, WORKER) as ctx:
        held = queue.claim(ctx, "elsewhere", timedelta(minutes=5), job_id=jobs[0])
    assert held is not None and held.id == jobs[0]  # the user's one slot is taken
    sent, kinds = Sent(), frozenset({"run"})
    handle_message(runtime, kinds, sent, jobs[1])  # type: ignore[arg-type]
    assert sent.messages == []
    with transaction(runtime, WORKER) as ctx:
        queue.finish(ctx, jobs[0], "elsewhere")  # the slot is free again
    handle_message(runtime, kinds, sent, jobs[1])  # type: ignore[arg-type]
    assert sent.messages == [(jobs[2], "run", None)]  # ran, then woke the user's next job
