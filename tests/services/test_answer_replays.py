"""Recording answers is idempotent: a batch written again (its commit went through but the
acknowledgement was lost, and the batch was sent again) stores nothing twice, fails nothing and
charges each question once, on SQLite and PostgreSQL alike."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from sqlalchemy import func, select

from benchgen.core.context import Principal
from benchgen.db.tables import Run, RunResult, RunSample
from benchgen.evals.types import Answer
from benchgen.jobs.handlers import WORKER
from benchgen.services.runs import execution, launch
from benchgen.services.runs.execution import RunPlan
from benchgen.services.runtime import Runtime, transaction
from tests.services.test_runs import BIG_MCQ, ledger_sum, open_loopback, priced_model, stub
from tests.support import OPERATOR, World

pytestmark = pytest.mark.both_backends  # INSERT … ON CONFLICT is spelled per dialect
__all__ = ["open_loopback", "stub"]  # fixtures, used by name


def _answers(plan: RunPlan, positions: range) -> list[Answer]:
    """A correct-looking reply per position: 10 input and 5 output tokens, one call each."""
    prompts = {item.index: prompt for item, prompt in plan.work}
    return [Answer(p, prompts[p], "ANSWER: A", None, 10, 5, 1, 1) for p in positions]


def _record(runtime: Runtime, plan: RunPlan, answers: list[Answer]) -> int:
    with transaction(runtime, WORKER) as ctx:
        return execution.record_answers(ctx, plan, answers)


def _counts(world: World, run_id: str) -> dict[str, int]:
    def read(ctx: Any) -> dict[str, int]:
        run = ctx.session.get(Run, run_id)
        results = select(func.count()).select_from(RunResult).where(RunResult.run_id == run_id)
        samples = select(func.count()).select_from(RunSample).where(RunSample.run_id == run_id)
        return {
            "results": int(ctx.session.scalar(results) or 0),
            "samples": int(ctx.session.scalar(samples) or 0),
            "done": run.done_count,
            "errors": run.error_count,
            "calls": run.calls,
            "tokens": run.input_tokens + run.output_tokens,
        }

    counts: dict[str, int] = world.ctx_call(OPERATOR, read)
    return counts


def test_a_batch_recorded_again_stores_and_charges_each_question_once(
    world: World, open_loopback: Runtime, stub: Any
) -> None:
    """It failed the whole batch with an IntegrityError (a duplicate primary key)."""
    ana = world.user("ana@example.com", credits_=100)
    bm = world.benchmark(ana, BIG_MCQ)
    run = world.do(Principal.web(ana), launch.start_run, bm, priced_model(world, stub))
    with transaction(open_loopback, WORKER) as ctx:
        plan = execution.begin_run(ctx, run.id)
    assert plan is not None
    first = _answers(plan, range(5))
    assert _record(open_loopback, plan, first) == 5
    assert _record(open_loopback, plan, first) == 5  # the same batch again
    expected = {"results": 5, "samples": 0, "done": 5, "errors": 0, "calls": 5, "tokens": 75}
    assert _counts(world, run.id) == expected
    # A later batch overlapping the first (other replies to questions 3 and 4): the first
    # replies stand, the new questions are recorded.
    overlapping = [replace(a, raw="ANSWER: B") for a in _answers(plan, range(3, 12))]
    assert _record(open_loopback, plan, overlapping) == 12
    expected = {"results": 12, "samples": 0, "done": 12, "errors": 0, "calls": 12, "tokens": 180}
    assert _counts(world, run.id) == expected
    kept = world.ctx_call(
        OPERATOR,
        lambda ctx: ctx.session.scalar(
            select(RunResult.raw).where(RunResult.run_id == run.id, RunResult.position == 3)
        ),
    )
    assert kept == "ANSWER: A"
    with transaction(open_loopback, WORKER) as ctx:
        execution.finish_run(ctx, run.id, cancelled=False)
    done = world.do(Principal.web(ana), launch.get_run, run.id)
    assert done.status == "completed" and done.cost == 12 * 2, "each question paid once"
    assert ledger_sum(world, ana) == 100 - 12 * 2
    assert not stub.received, "recording asks no model"


def test_an_extra_sample_recorded_again_is_kept_once(world: World, runtime: Runtime) -> None:
    ana = world.user("ana@example.com")
    options = {"settings": {"samples": 2}}
    bm = world.benchmark(ana, BIG_MCQ)
    run = world.do(Principal.web(ana), launch.start_run, bm, "mdl_builtin_first", None, options)
    with transaction(runtime, WORKER) as ctx:
        plan = execution.begin_run(ctx, run.id)
    assert plan is not None
    batch = [replace(a, sample=s) for a in _answers(plan, range(2)) for s in (0, 1)]
    _record(runtime, plan, batch)
    _record(runtime, plan, batch[1:] + batch[1:])  # again, and a sample twice in one batch
    expected = {"results": 2, "samples": 2, "done": 2, "errors": 0, "calls": 4, "tokens": 60}
    assert _counts(world, run.id) == expected
