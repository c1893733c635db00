"""The per-user limit on executing jobs lives in the database, so it holds across worker
processes: two `benchgen worker` processes of two threads each on one PostgreSQL database never
run two of one user's runs at once, and another user's run is not kept waiting behind them."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from sqlalchemy import select

from benchgen.core.context import Principal
from benchgen.db.tables import Run
from benchgen.services import models
from benchgen.services.runs import launch
from benchgen.services.runtime import Runtime
from tests.evals.stub_openai import StubOpenAI
from tests.processes import Deployment, wait_until
from tests.support import MCQ, OPERATOR, World


def _spans(world: World, run_ids: list[str]) -> list[tuple[Any, Any, str]]:
    """(started_at, finished_at, status) of each run, in no particular order."""

    def read(ctx: Any) -> list[tuple[Any, Any, str]]:
        rows = ctx.session.execute(
            select(Run.started_at, Run.finished_at, Run.status).where(Run.id.in_(run_ids))
        )
        return [tuple(row) for row in rows]

    return world.ctx_call(OPERATOR, read)


@pytest.mark.parametrize("backend", ["postgres"])
def test_one_users_runs_never_overlap_across_two_worker_processes(
    world: World, runtime: Runtime
) -> None:
    world.rt.settings.model_host_allowlist = "127.0.0.1"
    ana, bob = world.user("ana@example.com"), world.user("bob@example.com")
    anas, bobs = world.benchmark(ana, MCQ), world.benchmark(bob, MCQ)
    live = Deployment(runtime, BENCHGEN_USER_RUN_SLOTS="1", BENCHGEN_RUN_CONCURRENCY="1")
    with StubOpenAI(latency_s=0.4) as stub:
        spec = {"name": "Slow", "endpoint_model": "stub", "base_url": stub.base_url}
        slow = world.do(OPERATOR, models.create_platform_model, spec).id
        mine = [world.do(Principal.web(ana), launch.start_run, anas, slow).id for _ in range(4)]
        theirs = world.do(Principal.web(bob), launch.start_run, bobs, slow).id
        try:
            for _ in range(2):
                live.start("worker", "--threads", "2")
            every = [*mine, theirs]
            wait_until(lambda: {s for *_, s in _spans(world, every)} == {"completed"}, 180, "runs")
        finally:
            live.stop()
    spans = sorted(_spans(world, mine))
    for (_, finished, _), (started, _, _) in itertools.pairwise(spans):
        assert started >= finished, spans  # one of ana's runs at a time, whoever ran it
    (bob_started, _, _), *_ = _spans(world, [theirs])
    assert bob_started < spans[-1][0]  # bob did not wait for ana's queue to drain
