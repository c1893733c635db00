"""Recording the AI judge's verdicts is idempotent: a batch recorded again (its commit went
through but the acknowledgement was lost) changes no verdict and counts the judge's tokens
once, on SQLite and PostgreSQL alike."""

from __future__ import annotations

from typing import Any

import pytest

from benchgen.core.context import Principal
from benchgen.db.tables import Run
from benchgen.evals.types import Answer
from benchgen.jobs.handlers import WORKER
from benchgen.services.benchmarks import judges
from benchgen.services.runs import execution, launch, results
from benchgen.services.runs.execution import JudgingPlan
from benchgen.services.runtime import Runtime, transaction
from tests.services.test_judge import CAPITALS, stub, stub_model
from tests.support import OPERATOR, World

pytestmark = pytest.mark.both_backends
__all__ = ["stub"]  # a fixture, used by name


def _judging(world: World, runtime: Runtime, stub: Any, ana: str) -> JudgingPlan:
    """A run of `ana` on the capitals whose three answers await the judge."""
    bm = world.benchmark(ana, CAPITALS)
    web = Principal.web(ana)
    world.do(web, judges.set_judge, bm, "openai_compat", "judge-1", stub.base_url, None)
    run_id = world.do(web, launch.start_run, bm, stub_model(world, stub)).id
    with transaction(runtime, WORKER) as ctx:
        plan = execution.begin_run(ctx, run_id)
        assert plan is not None
        answers = [
            Answer(item.index, p, "ANSWER: Rome", None, 10, 5, 1, 1) for item, p in plan.work
        ]
        execution.record_answers(ctx, plan, answers)
    with transaction(runtime, WORKER) as ctx:
        judging = execution.plan_judging(ctx, run_id)
    assert judging is not None and len(judging.work) == 3
    return judging


def _judge(runtime: Runtime, plan: JudgingPlan, positions: range, verdict: str) -> None:
    """The judge's replies for `positions`: 9 input and 4 output tokens each."""
    prompts = {item.index: prompt for item, prompt in plan.work}
    replies = [Answer(p, prompts[p], f"VERDICT: {verdict}", None, 9, 4, 1, 1) for p in positions]
    with transaction(runtime, WORKER) as ctx:
        execution.record_judgements(ctx, plan, replies + replies[:1])  # one reply twice, too


def _judge_tokens(world: World, run_id: str) -> tuple[int, int]:
    def read(ctx: Any) -> tuple[int, int]:
        run = ctx.session.get(Run, run_id)
        return run.judge_input_tokens, run.judge_output_tokens

    tokens: tuple[int, int] = world.ctx_call(OPERATOR, read)
    return tokens


def test_a_judgement_batch_recorded_again_counts_the_judges_tokens_once(
    world: World, runtime: Runtime, stub: Any
) -> None:
    """The judge's tokens were added again on every recording of the same batch."""
    ana = world.user("ana@example.com")
    plan = _judging(world, runtime, stub, ana)
    _judge(runtime, plan, range(2), "CORRECT")
    _judge(runtime, plan, range(2), "CORRECT")  # the same batch again
    assert _judge_tokens(world, plan.run_id) == (18, 8)
    # A later batch overlapping the first (another verdict on question 1): the first verdict
    # stands, and only question 2's judging counts.
    _judge(runtime, plan, range(1, 3), "INCORRECT")
    assert _judge_tokens(world, plan.run_id) == (27, 12)
    rows = world.do(Principal.web(ana), results.list_results, plan.run_id)
    assert [row["outcome"] for row in rows] == ["correct", "correct", "wrong"]
