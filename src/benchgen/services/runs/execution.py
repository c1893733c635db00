"""Executing a queued run (system principal only): plan the work, record answers in batches,
finish with aggregates and settled credits, or give up with a refund."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import insert, select, update

from benchgen.core.context import Context
from benchgen.core.permissions import Action
from benchgen.core.statuses import RUN_FINAL, RunStatus
from benchgen.db.tables import Model, Run, RunResult
from benchgen.evals.prompts import letter_only_prompt, render_prompt
from benchgen.evals.scorers import registry
from benchgen.evals.scorers.extract import extract_final_answer
from benchgen.evals.scorers.judge import judge_prompt, read_verdict
from benchgen.evals.scorers.verdict import errored, no_answer
from benchgen.evals.types import Answer, Item, Key, ModelSpec, Scored
from benchgen.services import _model_specs, access
from benchgen.services.accounts import _ledger
from benchgen.services.benchmarks import _question_store, judges, scoring
from benchgen.services.runs import _log_writer, _verdicts

PENDING = "pending"  # stored answer awaiting the AI judge
LOGPROB = "choice_logprob"  # scores the letter's log-probability: a letter-only prompt


@dataclass(frozen=True)
class RunPlan:
    """Everything the engine needs for the questions still to do (none of it user data beyond
    the run's own questions; the key stays here for scoring)."""

    run_id: str
    spec: ModelSpec
    scoring: dict[str, Any]
    work: list[tuple[Item, str]]
    keys: dict[int, Key]
    total: int


def begin_run(ctx: Context, run_id: str) -> RunPlan | None:
    """Mark the run running and plan the questions not yet answered (so a re-claimed run
    resumes instead of starting over). None when there is nothing to do."""
    access.require(ctx, Action.RUN_EXECUTE)
    run = ctx.session.get(Run, run_id)
    if run is None or run.status in RUN_FINAL:
        return None
    if run.cancel_requested:
        _close(ctx, run, RunStatus.CANCELLED)
        return None
    model = ctx.session.get(Model, run.model_id)
    assert model is not None  # runs keep their model row (models are only soft-deleted)
    done = set(ctx.session.scalars(select(RunResult.position).where(RunResult.run_id == run.id)))
    stored = _question_store.load_canonical(ctx, run.benchmark_id)
    by_logprob = run.scoring.get("method") == LOGPROB
    render = letter_only_prompt if by_logprob else render_prompt
    work, keys = [], {}
    for position, question in enumerate(stored):
        keys[position] = scoring.key_for(question)
        if position not in done:
            item = Item(position, question.prompt, question.choices)
            work.append((item, render(item)))
    if run.status == RunStatus.QUEUED:
        run.status, run.started_at = RunStatus.RUNNING, ctx.now()
        _log_writer.append(ctx, run.id, f"Started: {len(stored)} questions")
    else:
        _log_writer.append(ctx, run.id, f"Resumed: {len(work)} questions left")
    spec = _model_specs.model_spec(ctx, model)
    if by_logprob:
        spec = replace(spec, params={**spec.params, "letter_logprobs": True})
    return RunPlan(run.id, spec, dict(run.scoring), work, keys, len(stored))


def record_answers(ctx: Context, plan: RunPlan, answers: list[Answer]) -> int:
    """Score and store one batch with a single bulk insert; returns questions done so far."""
    access.require(ctx, Action.RUN_EXECUTE)
    rows = [_row(plan, answer, _verdict(plan, answer)) for answer in answers]
    if rows:
        ctx.session.execute(insert(RunResult), rows)
    errors = sum(1 for answer in answers if answer.error is not None)
    ctx.session.execute(
        update(Run)
        .where(Run.id == plan.run_id)
        .values(
            done_count=Run.done_count + len(answers),
            error_count=Run.error_count + errors,
            input_tokens=Run.input_tokens + sum(a.input_tokens for a in answers),
            output_tokens=Run.output_tokens + sum(a.output_tokens for a in answers),
        )
    )
    done = int(ctx.session.scalar(select(Run.done_count).where(Run.id == plan.run_id)) or 0)
    percent = math.floor(100 * done / plan.total) if plan.total else 100
    _log_writer.append(
        ctx, plan.run_id, f"Processing: {done}/{plan.total} ({percent}%)", _secrets(plan)
    )
    return done


def _verdict(plan: RunPlan, answer: Answer) -> Scored | None:
    """The verdict now, or None when the AI judge will give it in the judging pass."""
    if plan.scoring.get("method") != "judge" or answer.error is not None:
        return registry.score(answer, plan.keys[answer.index], plan.scoring)
    extracted = extract_final_answer(answer.raw or "")
    return None if extracted else no_answer(extracted)


def _row(plan: RunPlan, answer: Answer, verdict: Scored | None) -> dict[str, Any]:
    return {
        "run_id": plan.run_id,
        "position": answer.index,
        "prompt_sent": answer.prompt_sent,
        "raw": answer.raw,
        "error": answer.error,
        "extracted": verdict.extracted if verdict else extract_final_answer(answer.raw or ""),
        "outcome": verdict.outcome if verdict else PENDING,
        "score": verdict.score if verdict else 0.0,
        "reasoning": verdict.reasoning if verdict else None,
        "latency_ms": answer.latency_ms,
        "input_tokens": answer.input_tokens,
        "output_tokens": answer.output_tokens,
        "attempts": answer.attempts,
        "letter_logprobs": answer.letter_logprobs,
    }


@dataclass(frozen=True)
class JudgingPlan:
    """The judging pass: one grading prompt per answer awaiting the judge."""

    run_id: str
    spec: ModelSpec
    work: list[tuple[Item, str]]
    extracted: dict[int, str]


def plan_judging(ctx: Context, run_id: str) -> JudgingPlan | None:
    """Grading prompts for the answers awaiting the AI judge; None when there are none."""
    access.require(ctx, Action.RUN_EXECUTE)
    run = ctx.session.get(Run, run_id)
    assert run is not None  # called right after the answering pass of this run
    rows = ctx.session.execute(
        select(RunResult.position, RunResult.extracted).where(
            RunResult.run_id == run_id, RunResult.outcome == PENDING
        )
    )
    pending = {position: extracted for position, extracted in rows}
    spec = judges.judge_spec(ctx, run.benchmark_id)
    if not pending:
        return None
    if spec is None:
        missing = errored("the benchmark's AI judge was removed before it could grade")
        _verdicts.update_verdicts(ctx, run_id, {position: missing for position in pending})
        return None
    stored = _question_store.load_canonical(ctx, run.benchmark_id)
    work = []
    for position, extracted in sorted(pending.items()):
        item = Item(position, stored[position].prompt, stored[position].choices)
        work.append((item, judge_prompt(item, extracted or "", scoring.key_for(stored[position]))))
    return JudgingPlan(run_id, spec, work, {p: e or "" for p, e in pending.items()})


def record_judgements(ctx: Context, plan: JudgingPlan, replies: list[Answer]) -> None:
    """Store the judge's verdicts for one batch, and count its tokens apart from the model's."""
    access.require(ctx, Action.RUN_EXECUTE)
    verdicts = {
        reply.index: read_verdict(reply.raw, plan.extracted[reply.index])
        if reply.raw
        else errored(f"the judge failed: {reply.error}", plan.extracted[reply.index])
        for reply in replies
    }
    _verdicts.update_verdicts(ctx, plan.run_id, verdicts)
    ctx.session.execute(
        update(Run)
        .where(Run.id == plan.run_id)
        .values(
            judge_input_tokens=Run.judge_input_tokens + sum(r.input_tokens for r in replies),
            judge_output_tokens=Run.judge_output_tokens + sum(r.output_tokens for r in replies),
        )
    )


def is_cancel_requested(ctx: Context, run_id: str) -> bool:
    """True once someone asked the run to stop."""
    access.require(ctx, Action.RUN_EXECUTE)
    return bool(ctx.session.scalar(select(Run.cancel_requested).where(Run.id == run_id)))


def finish_run(ctx: Context, run_id: str, cancelled: bool) -> None:
    """Compute aggregates and leaderboard scores, settle the real cost, close the run."""
    access.require(ctx, Action.RUN_EXECUTE)
    run = ctx.session.get(Run, run_id)
    if run is None or run.status in RUN_FINAL:
        return
    _verdicts.summarise(ctx, run)
    _close(ctx, run, RunStatus.CANCELLED if cancelled else RunStatus.COMPLETED)


def abandon_run(ctx: Context, run_id: str, error: str) -> None:
    """The platform failed the run (crash, attempts exhausted): fail it and refund in full."""
    access.require(ctx, Action.RUN_EXECUTE)
    run = ctx.session.get(Run, run_id)
    if run is None or run.status in RUN_FINAL:
        return
    run.error = error[:2000]
    if run.reservation_id:
        _ledger.refund_credits(ctx, run.reservation_id, "failed through the platform's fault")
        run.reservation_id = None
    run.status, run.cost, run.finished_at = RunStatus.FAILED, 0, ctx.now()
    _log_writer.append(ctx, run.id, f"Failed: {error[:300]} — credits refunded")


def _close(ctx: Context, run: Run, status: str) -> None:
    model = ctx.session.get(Model, run.model_id)
    answered = run.done_count - run.error_count
    tokens = run.input_tokens + run.output_tokens
    price_q, price_t = (model.price_per_question, model.price_per_1k_tokens) if model else (0, 0)
    run.cost = min(answered * price_q + math.ceil(tokens * price_t / 1000), run.estimated_cost)
    if run.reservation_id:
        _ledger.settle_credits(ctx, run.reservation_id, run.cost)
    run.status, run.finished_at = status, ctx.now()
    _log_writer.append(
        ctx,
        run.id,
        f"{status.capitalize()}: {run.done_count}/{run.question_count}"
        f" answered, {run.error_count} errors, {run.cost} credits",
    )


def _secrets(plan: RunPlan) -> tuple[str, ...]:
    return (plan.spec.api_key,) if plan.spec.api_key else ()
