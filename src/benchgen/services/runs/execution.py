"""Executing a queued run (system principal only): plan the work, record answers in batches,
finish with aggregates and settled credits, or give up with a refund."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import insert, select, update
from sqlalchemy.exc import IntegrityError

from benchgen.core.context import Context
from benchgen.core.permissions import Action
from benchgen.core.statuses import RUN_FINAL, RunStatus
from benchgen.core.text import plural
from benchgen.db.inserts import insert_new
from benchgen.db.tables import Model, Run, RunResult, RunSample
from benchgen.evals.prompts import compose_prompt, letter_only_prompt, render_prompt
from benchgen.evals.scorers import registry
from benchgen.evals.scorers.extract import extract_final_answer
from benchgen.evals.scorers.judge import judge_prompt, read_verdict
from benchgen.evals.scorers.verdict import errored, no_answer
from benchgen.evals.types import Answer, Item, Key, ModelSpec, Scored
from benchgen.services import _model_specs, access
from benchgen.services.accounts import _ledger
from benchgen.services.benchmarks import _question_store, judges, scoring
from benchgen.services.benchmarks.questions import Canonical
from benchgen.services.runs import (
    _log_writer,
    _replies,
    _response_cache,
    _verdicts,
    notifications,
)
from benchgen.services.runs.settings import RunSettings, provider_params

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
    cache: _response_cache.Scope | None = None  # the launcher's cache, when the run uses it


def begin_run(ctx: Context, run_id: str) -> RunPlan | None:
    """Mark the run running and plan the answers not yet given (so a re-claimed run resumes
    instead of starting over); replies found in the launcher's response cache are recorded at
    once, without calling the model. None when there is nothing to do."""
    access.require(ctx, Action.RUN_EXECUTE)
    # Locked: a cancel of the queued run in between (`launch.cancel_run` takes the same lock)
    # refunded it in full, and then it ran to the end all the same.
    run = ctx.session.get(Run, run_id, with_for_update=True, populate_existing=True)
    if run is None or run.status in RUN_FINAL:
        return None
    if run.cancel_requested:
        _close(ctx, run, RunStatus.CANCELLED)
        return None
    model = ctx.session.get(Model, run.model_id)
    assert model is not None  # runs keep their model row (models are only soft-deleted)
    settings = run_settings(run)
    stored = _question_store.load_canonical(ctx, run.benchmark_id)
    asked = run.positions if run.positions is not None else list(range(len(stored)))
    work = _work(ctx, run, stored, asked, settings)
    keys = {position: scoring.key_for(question) for position, question in enumerate(stored)}
    if run.status == RunStatus.QUEUED:
        run.status, run.started_at = RunStatus.RUNNING, ctx.now()
        _log_writer.append(ctx, run.id, f"Started: {plural(len(asked), 'question')}")
    else:
        left = len({item.index for item, _ in work})
        _log_writer.append(ctx, run.id, f"Resumed: {plural(left, 'question')} left")
    spec = _model_specs.model_spec(ctx, model)
    spec = replace(spec, params={**spec.params, **provider_params(settings)})
    if run.scoring.get("method") == LOGPROB:
        spec = replace(spec, params={**spec.params, "letter_logprobs": True})
    cache = None
    if run.settings.get("cache"):
        described = {"id": model.id, "endpoint": model.endpoint_model, "url": spec.base_url}
        cache = _response_cache.scope_for(run.launched_by, described, spec.params)
    plan = RunPlan(run.id, spec, dict(run.scoring), work, keys, len(asked), cache)
    return _answer_from_cache(ctx, plan) if cache else plan


def run_settings(run: Run) -> RunSettings:
    """A run's generation settings (the defaults for runs launched before there were any)."""
    known = {k: v for k, v in (run.settings or {}).items() if k in RunSettings.model_fields}
    return RunSettings.model_validate(known)


def _work(
    ctx: Context, run: Run, stored: list[Canonical], asked: list[int], settings: RunSettings
) -> list[tuple[Item, str]]:
    """(item, prompt) for every sample of every asked question not answered yet."""
    done = {
        (p, 0)
        for p in ctx.session.scalars(select(RunResult.position).where(RunResult.run_id == run.id))
    }
    samples = select(RunSample.position, RunSample.sample).where(RunSample.run_id == run.id)
    done |= {(position, sample) for position, sample in ctx.session.execute(samples)}
    render = letter_only_prompt if run.scoring.get("method") == LOGPROB else render_prompt
    examples = [
        (Item(p, stored[p].prompt, stored[p].choices), stored[p].answers[0])
        for p in run.settings.get("few_shot_positions") or []
    ]
    work = []
    for position in asked:
        question = stored[position]
        item = Item(position, question.prompt, question.choices)
        prompt = render(item)
        if examples or settings.chain_of_thought:
            prompt = compose_prompt(prompt, examples, settings.chain_of_thought)
        work += [
            (replace(item, sample=sample), prompt)
            for sample in range(settings.samples)
            if (position, sample) not in done
        ]
    return work


def _answer_from_cache(ctx: Context, plan: RunPlan) -> RunPlan:
    """Record the replies the cache holds; the plan keeps only the asks it does not."""
    assert plan.cache is not None  # only cached runs come here
    keyed = [(_response_cache.key_of(plan.cache, p, i.sample), i, p) for i, p in plan.work]
    found = _response_cache.lookup(ctx, plan.cache, [key for key, _, _ in keyed])
    if not found:
        return plan
    reused = [
        Answer(item.index, prompt, found[key], None, 0, 0, 0, 0, sample=item.sample)
        for key, item, prompt in keyed
        if key in found
    ]
    _log_writer.append(ctx, plan.run_id, f"Reused {len(reused)} answers from your cache")
    record_answers(ctx, plan, reused)
    left = [(item, prompt) for key, item, prompt in keyed if key not in found]
    return replace(plan, work=left)


def record_answers(ctx: Context, plan: RunPlan, answers: list[Answer]) -> int:
    """Score and store one batch with bulk inserts (a question's first sample is its result,
    later ones are kept apart); returns questions done so far. An answer already stored (a
    batch written again after its commit's acknowledgement was lost) is skipped: the first one
    stands, and its question is counted and charged once. Replies longer than the deployment's
    `max_reply_chars` are clipped (`_replies`) before they are scored, cached and stored."""
    access.require(ctx, Action.RUN_EXECUTE)
    answers = _replies.clip_answers(answers, ctx.settings.max_reply_chars)
    stored = _store_new(ctx, plan, answers)
    first = [answer for answer in stored if answer.sample == 0]
    called = [a for a in stored if a.error is None and a.attempts > 0]
    if plan.cache is not None:
        _response_cache.store(ctx, plan.cache, _cacheable(plan.cache, called))
    ctx.session.execute(
        update(Run)
        .where(Run.id == plan.run_id)
        .values(
            done_count=Run.done_count + len(first),
            # Questions, as done_count: an extra sample that failed leaves its question done.
            error_count=Run.error_count + sum(1 for a in first if a.error is not None),
            calls=Run.calls + len(called),
            input_tokens=Run.input_tokens + sum(a.input_tokens for a in stored),
            output_tokens=Run.output_tokens + sum(a.output_tokens for a in stored),
        )
    )
    done = int(ctx.session.scalar(select(Run.done_count).where(Run.id == plan.run_id)) or 0)
    percent = math.floor(100 * done / plan.total) if plan.total else 100
    _log_writer.append(
        ctx, plan.run_id, f"Processing: {done}/{plan.total} ({percent}%)", _secrets(plan)
    )
    return done


def _store_new(ctx: Context, plan: RunPlan, answers: list[Answer]) -> list[Answer]:
    """Insert the batch's answers whose question (and sample) has none stored yet; those it
    stored. Plain bulk inserts first, in a savepoint: nearly every batch is wholly new, and
    INSERT … RETURNING costs PostgreSQL half as much again as the inserts themselves."""
    first = [_row(plan, answer, _verdict(plan, answer)) for answer in answers if answer.sample == 0]
    extra = [_sample_row(plan, answer) for answer in answers if answer.sample > 0]
    try:
        with ctx.session.begin_nested():
            if first:
                ctx.session.execute(insert(RunResult), first)
            if extra:
                ctx.session.execute(insert(RunSample), extra)
        return answers
    except IntegrityError:  # some were stored already (the batch was written before)
        return _store_missing(ctx, answers, first, extra)


def _store_missing(
    ctx: Context, answers: list[Answer], first: list[dict[str, Any]], extra: list[dict[str, Any]]
) -> list[Answer]:
    """Insert the rows whose key is not stored, skipping the others; the answers it stored."""
    stored: set[tuple[int, int]] = set()
    if first:
        results = insert_new(ctx.session, RunResult, ["run_id", "position"])
        returned = ctx.session.scalars(results.returning(RunResult.position), first)
        stored |= {(position, 0) for position in returned}
    if extra:
        samples = insert_new(ctx.session, RunSample, ["run_id", "position", "sample"])
        rows = ctx.session.execute(samples.returning(RunSample.position, RunSample.sample), extra)
        stored |= {(position, sample) for position, sample in rows}
    kept = []
    for answer in answers:  # one answer per stored row, even when a batch repeats one
        if (answer.index, answer.sample) in stored:
            stored.discard((answer.index, answer.sample))
            kept.append(answer)
    return kept


def _cacheable(scope: _response_cache.Scope, answers: list[Answer]) -> list[tuple[str, str, int]]:
    return [
        (
            _response_cache.key_of(scope, a.prompt_sent, a.sample),
            a.raw or "",
            a.input_tokens + a.output_tokens,
        )
        for a in answers
    ]


def _sample_row(plan: RunPlan, answer: Answer) -> dict[str, Any]:
    return {
        "run_id": plan.run_id,
        "position": answer.index,
        "sample": answer.sample,
        "prompt_sent": answer.prompt_sent,
        "raw": answer.raw,
        "error": answer.error,
        "input_tokens": answer.input_tokens,
        "output_tokens": answer.output_tokens,
        "attempts": answer.attempts,
    }


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
    """Store the judge's verdicts for one batch, and count its tokens apart from the model's.
    Only answers still awaiting the judge take a verdict and count their tokens, so a batch
    recorded again (its acknowledgement lost) changes nothing and counts nothing twice."""
    access.require(ctx, Action.RUN_EXECUTE)
    by_position = {reply.index: reply for reply in replies}
    awaiting = _verdicts.lock_awaiting(ctx, plan.run_id, sorted(by_position), PENDING)
    fresh = [reply for position, reply in by_position.items() if position in awaiting]
    if not fresh:
        return
    # The judge's reply is kept as the verdict's reasoning: clipped as the model's replies are.
    fresh = _replies.clip_answers(fresh, ctx.settings.max_reply_chars)
    verdicts = {
        reply.index: read_verdict(reply.raw, plan.extracted[reply.index])
        if reply.raw
        else errored(f"the judge failed: {reply.error}", plan.extracted[reply.index])
        for reply in fresh
    }
    _verdicts.update_verdicts(ctx, plan.run_id, verdicts)
    ctx.session.execute(
        update(Run)
        .where(Run.id == plan.run_id)
        .values(
            judge_input_tokens=Run.judge_input_tokens + sum(r.input_tokens for r in fresh),
            judge_output_tokens=Run.judge_output_tokens + sum(r.output_tokens for r in fresh),
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
    if not cancelled and run.done_count and run.error_count >= run.done_count:
        # Not one answer came back (an endpoint down, a key refused): no score to rank, and
        # "completed, accuracy 0%" would read as the model's.
        run.error = f"Every question failed; the first: {_first_error(ctx, run.id)}"[:2000]
        _close(ctx, run, RunStatus.FAILED)
        return
    _close(ctx, run, RunStatus.CANCELLED if cancelled else RunStatus.COMPLETED)


def _first_error(ctx: Context, run_id: str) -> str:
    first = ctx.session.scalar(
        select(RunResult.error)
        .where(RunResult.run_id == run_id, RunResult.error.is_not(None))
        .order_by(RunResult.position)
        .limit(1)
    )
    return first or "no reply"


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
    notifications.notify_run_finished(ctx, run.id)


def _close(ctx: Context, run: Run, status: str) -> None:
    model = ctx.session.get(Model, run.model_id)
    answered = run.calls  # replies reused from the cache cost nothing
    tokens = run.input_tokens + run.output_tokens
    price_q, price_t = (model.price_per_question, model.price_per_1k_tokens) if model else (0, 0)
    run.cost = min(answered * price_q + math.ceil(tokens * price_t / 1000), run.estimated_cost)
    if run.reservation_id:
        _ledger.settle_credits(ctx, run.reservation_id, run.cost)
    run.status, run.finished_at = status, ctx.now()
    # The summary's count when there is one: it holds the judge's failures too.
    errors = (run.summary or {}).get("errors", run.error_count)
    _log_writer.append(
        ctx,
        run.id,
        f"{status.capitalize()}: {run.done_count}/{run.question_count}"
        f" questions, {errors} errors, {run.cost} credits",
    )
    notifications.notify_run_finished(ctx, run.id)


def _secrets(plan: RunPlan) -> tuple[str, ...]:
    return (plan.spec.api_key,) if plan.spec.api_key else ()
