"""Runs: estimate, launch (reserve credits, freeze questions, enqueue), read, cancel."""

from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from sqlalchemy import func, select

from benchgen.core.context import Context
from benchgen.core.errors import Conflict, NotFound, invalid
from benchgen.core.ids import new_id
from benchgen.core.permissions import Action, Role
from benchgen.core.statuses import RUN_ACTIVE, ModelStatus, RunStatus
from benchgen.core.text import plural
from benchgen.db.tables import Benchmark, Model, Phase, PhaseTask, Run
from benchgen.services import _enqueue, _model_specs, access, audit
from benchgen.services.accounts import _ledger, ratelimits
from benchgen.services.benchmarks import judges, lifecycle, phases, scoring
from benchgen.services.keysets import Newest, newest_first
from benchgen.services.runs import _asking, _log_writer, leaderboards
from benchgen.services.runs.settings import RunOptions, check_supported, describe, recorded
from benchgen.services.specs import MAX_LIST, check_window, parse

# Until a run reports real usage, assume this many tokens per question beyond the prompt.
EXPECTED_OUTPUT_TOKENS = 512
CHARS_PER_TOKEN = 4
CUSTOM_PROMPT_TOKENS = 1000  # assumed per model call of a custom benchmark's harness


@dataclass(frozen=True)
class Estimate:
    """The most a run can cost, shown before launching it."""

    benchmark_id: str
    model_id: str
    model_name: str
    question_count: int
    credits: int
    basis: str
    settings: str  # the settings that differ from the defaults, in words
    partial: bool  # a subset: never eligible for a leaderboard


@dataclass(frozen=True)
class RunView:
    """A run as the principal may see it (aggregates only; per-question detail is separate)."""

    id: str
    benchmark_id: str
    phase_id: str
    model_id: str | None
    model_name: str
    status: RunStatus
    benchmark_version: int
    scoring: dict[str, Any]
    question_count: int
    done_count: int
    error_count: int
    estimated_cost: int
    cost: int | None
    judge_input_tokens: int  # 0 for viewers outside the benchmark's team
    judge_output_tokens: int
    input_tokens: int
    output_tokens: int
    summary: dict[str, Any]
    scores: dict[str, Any]
    score_edited: bool
    launched_by: str
    door: str
    error: str
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    detail_visible: bool
    settings: dict[str, Any]
    partial: bool
    retry_of: str | None


def estimate_run(
    ctx: Context,
    benchmark_id: str,
    model_id: str,
    options: RunOptions | dict[str, Any] | None = None,
) -> Estimate:
    """The credits a run would reserve: per-question price plus token price, rounded up, for
    every sample of every asked question (few-shot examples and other prompt additions
    counted in the prompt's length).

    Raises:
        NotFound: benchmark or model not visible to the principal.
        InvalidInput: the model cannot answer the benchmark's format (a choice-only baseline),
            or a setting is out of range or not supported by the model's provider.
        PermissionDenied / Conflict: the run could not be scored (a judge not open to the
            principal or not set up; letter log-probs from a model that has none).
    """
    benchmark = access.require_benchmark(ctx, benchmark_id, Action.BENCHMARK_READ)
    model = _model_specs.usable_model(ctx, model_id)
    _model_specs.require_answerable(model, benchmark.format)
    chosen = _options(options)
    _check_options(chosen, benchmark, model)
    if benchmark.format == "custom":
        return _custom_estimate(ctx, benchmark, model)
    _scoring_for(ctx, benchmark, model)
    asked = _asked(ctx, benchmark, chosen)
    return _estimate(benchmark, model, asked, chosen)


def preview_run(
    ctx: Context,
    benchmark_id: str,
    model_id: str,
    phase_id: str | None = None,
    options: RunOptions | dict[str, Any] | None = None,
) -> Estimate:
    """`estimate_run`, refused where `start_run` would refuse the same choices: an unknown or
    closed phase, and an estimate above the spending cap `max_credits`.

    Raises:
        See `estimate_run`.
        NotFound: no such phase in the benchmark.
        Conflict: the phase is not open now (none named: no phase is), or the estimate
            exceeds `max_credits`.
    """
    chosen = _options(options)
    estimate = estimate_run(ctx, benchmark_id, model_id, chosen)
    open_phase(ctx, access.require_benchmark(ctx, benchmark_id, Action.BENCHMARK_READ), phase_id)
    _check_cap(estimate, chosen)
    return estimate


def _options(options: RunOptions | dict[str, Any] | None) -> RunOptions:
    return parse(RunOptions, options) if options is not None else RunOptions()


def _check_options(options: RunOptions, benchmark: Benchmark, model: Model) -> None:
    method = str(scoring.settings_for(benchmark).get("method", ""))
    check_supported(options.settings, model.kind, model.endpoint_model, benchmark.format, method)
    if benchmark.format == "custom" and options.subset is not None:
        raise invalid(["subset"], "a custom benchmark's tasks run whole")
    if benchmark.format == "custom" and options.cache:
        # Its programs' calls go through the run's proxy, which keeps no replies: the cache
        # was dropped, and the run paid for every call it was asked to reuse.
        raise invalid(["cache"], "a custom benchmark's programs ask the model afresh: no cache")


def _asked(
    ctx: Context, benchmark: Benchmark, options: RunOptions, chosen: list[int] | None = None
) -> _asking.Asked:
    may_read_key = access.can(ctx, Action.BENCHMARK_READ_KEY, benchmark)
    return _asking.plan_questions(ctx, benchmark.id, options, may_read_key, chosen)


def _custom_estimate(ctx: Context, benchmark: Benchmark, model: Model) -> Estimate:
    """A custom run may make up to `custom_run_model_calls` model calls (the proxy stops there),
    each priced as a question with a long prompt."""
    calls = ctx.settings.custom_run_model_calls
    prompt_chars = calls * CUSTOM_PROMPT_TOKENS * CHARS_PER_TOKEN
    asked = _asking.Asked(None, [], calls, prompt_chars, False)
    estimate = _estimate(benchmark, model, asked, RunOptions())
    return replace(estimate, basis=f"up to {calls} model calls: " + estimate.basis)


def _estimate(
    benchmark: Benchmark, model: Model, asked: _asking.Asked, options: RunOptions
) -> Estimate:
    settings = options.settings
    samples, count = settings.samples, asked.count
    max_tokens = settings.max_tokens or int(model.params.get("max_tokens", EXPECTED_OUTPUT_TOKENS))
    calls = count * samples
    tokens = samples * asked.prompt_chars // CHARS_PER_TOKEN + calls * max_tokens
    cost = calls * model.price_per_question + math.ceil(tokens * model.price_per_1k_tokens / 1000)
    times = f" × {samples} samples" if samples > 1 else ""
    basis = (
        f"{plural(count, 'question')}{times} × {plural(model.price_per_question, 'credit')} + "
        f"up to {tokens} tokens × {plural(model.price_per_1k_tokens, 'credit')} per 1k tokens"
    )
    shown = describe(recorded(options, asked.few_shot_positions, asked.partial), whole=True)
    return Estimate(benchmark.id, model.id, model.name, count, cost, basis, shown, asked.partial)


def start_run(
    ctx: Context,
    benchmark_id: str,
    model_id: str,
    phase_id: str | None = None,
    options: RunOptions | dict[str, Any] | None = None,
) -> RunView:
    """Launch a run: reserve the estimate, freeze the questions, queue the work. `options`
    carries generation settings, samples, a subset (the run is then partial), the response
    cache and a spending cap: a run whose estimate exceeds `max_credits` does not start.

    Raises:
        NotFound: benchmark, model or phase not visible to the principal.
        PermissionDenied: the principal may not run on it, or the AI judge is not open to them.
        Conflict: the model is unavailable, the phase is not open (none named: no phase is
            open now), or there are no questions.
        InvalidInput: the model cannot answer the benchmark's format (a choice-only baseline).
        RateLimited: someone outside the benchmark's team used up its runs per day, or (custom
            benchmarks) the phase's submissions per day are used; `retry_at` says when they
            may run again.
        InsufficientCredits: the balance cannot cover the estimate; nothing starts.
        InvalidInput: a setting is out of range or not supported by the model's provider.
        Conflict: the estimate exceeds `max_credits`, or (custom benchmarks) the phase's
            `max_submissions` is used: a model run counts as a submission.
    """
    return launch_run(ctx, benchmark_id, model_id, phase_id, _options(options))


def launch_run(
    ctx: Context,
    benchmark_id: str,
    model_id: str,
    phase_id: str | None,
    options: RunOptions,
    chosen: list[int] | None = None,
    retry_of: str | None = None,
) -> RunView:
    """`start_run` with checked options, asking only the `chosen` positions when given (a
    retry, linked to the run `retry_of`).

    Raises:
        See `start_run`.
    """
    benchmark = access.require_held(ctx, benchmark_id, Action.RUN_LAUNCH)
    model = _model_specs.usable_model(ctx, model_id)
    if model.status != ModelStatus.AVAILABLE:
        raise Conflict(f"The model {model.name!r} is {model.status}.", {"model_id": model.id})
    _model_specs.require_answerable(model, benchmark.format)
    _check_options(options, benchmark, model)
    phase = open_phase(ctx, benchmark, phase_id)
    if benchmark.format == "custom":
        return _start_custom_run(ctx, benchmark, phase, model, options)
    settings = _scoring_for(ctx, benchmark, model)
    asked = _asked(ctx, benchmark, options, chosen)
    count = asked.count
    if count == 0:
        raise Conflict("This benchmark has no questions to run.", {"id": benchmark.id})
    estimate = _estimate(benchmark, model, asked, options)
    _check_cap(estimate, options)
    run_id = new_id("run")
    # Aggregate scores leak the key bit by bit: outsiders get a few runs a day (docs/permissions).
    ratelimits.consume_run(ctx, benchmark, run_id)
    reservation = _ledger.reserve_credits(ctx, estimate.credits, run_id)
    lifecycle.freeze_questions(ctx, benchmark.id)
    run = new_run(ctx, run_id, benchmark, phase, model, settings, count, estimate.credits)
    run.reservation_id = reservation
    partial = asked.partial or retry_of is not None
    run.settings = recorded(options, asked.few_shot_positions, partial)
    run.positions, run.partial, run.retry_of = asked.positions, partial, retry_of
    note = f"{count} questions, up to {estimate.credits} credits"
    queue_run(ctx, run, "run", note, audit.AuditAction.RUN_START, model_id=model.id)
    return view(ctx, run)


def _check_cap(estimate: Estimate, options: RunOptions) -> None:
    """The spending cap refuses at the start: the reservation already bounds what a run can
    cost, so a run under its cap never needs stopping halfway."""
    if options.max_credits is not None and estimate.credits > options.max_credits:
        raise Conflict(
            f"The run may cost up to {estimate.credits} credits, above your cap of "
            f"{options.max_credits}; nothing started.",
            {"estimate": estimate.credits, "max_credits": options.max_credits},
        )


def _start_custom_run(
    ctx: Context, benchmark: Benchmark, phase: Phase, model: Model, options: RunOptions
) -> RunView:
    """A catalogue model on a custom benchmark: the bundle's programs drive it through the
    per-run proxy (or the platform's engine over JSONL input), within the reservation and the
    phase's submission limits."""
    estimate = _custom_estimate(ctx, benchmark, model)
    _check_cap(estimate, options)
    phases.check_limits(ctx, phase)
    run_id = new_id("run")
    ratelimits.consume_run(ctx, benchmark, run_id)
    reservation = _ledger.reserve_credits(ctx, estimate.credits, run_id)
    tasks = phase_task_count(ctx, phase)
    run = new_run(ctx, run_id, benchmark, phase, model, {}, tasks, estimate.credits)
    run.reservation_id = reservation
    note = f"{tasks} task(s), up to {estimate.credits} credits"
    queue_run(ctx, run, "bundle_run", note, audit.AuditAction.RUN_START, model_id=model.id)
    return view(ctx, run)


def queue_run(
    ctx: Context, run: Run, job: str, note: str, action: audit.AuditAction, **details: Any
) -> None:
    """Hand an accepted run to the workers: queue its job, log it, audit who started it."""
    run.job_id = _enqueue.enqueue(ctx, job, {"run_id": run.id}, user_id=run.launched_by)
    _log_writer.append(ctx, run.id, f"Queued: {note}")
    audit.record(ctx, action, "run", run.id, benchmark_id=run.benchmark_id, **details)


def phase_task_count(ctx: Context, phase: Phase) -> int:
    """How many tasks a phase runs."""
    return int(
        ctx.session.scalar(
            select(func.count()).select_from(PhaseTask).where(PhaseTask.phase_id == phase.id)
        )
        or 0
    )


def new_run(
    ctx: Context,
    run_id: str,
    benchmark: Benchmark,
    phase: Phase,
    model: Model | None,
    settings: dict[str, Any],
    count: int,
    estimate: int,
) -> Run:
    user_id = ctx.principal.user_id
    assert user_id is not None  # RUN_LAUNCH is only ever allowed to a user
    run = Run(
        id=run_id,
        benchmark_id=benchmark.id,
        phase_id=phase.id,
        model_id=model.id if model else None,
        launched_by=user_id,
        door=ctx.principal.door,
        status=RunStatus.QUEUED,
        benchmark_version=benchmark.version,
        scoring=settings,
        question_count=count,
        estimated_cost=estimate,
        summary={},
        scores={},
        created_at=ctx.now(),
    )
    ctx.session.add(run)
    ctx.session.flush()
    return run


def open_phase(ctx: Context, benchmark: Benchmark, phase_id: str | None) -> Phase:
    """The chosen phase (by default `default_phase`), refused unless open now (the server's
    clock decides, whatever the bundle's dates say to a client).

    Raises:
        NotFound: no such phase.
        Conflict: the phase has not started or has ended; no phase is open for the default.
    """
    if not phase_id:
        return default_phase(ctx, benchmark)
    query = select(Phase).where(Phase.benchmark_id == benchmark.id, Phase.id == phase_id)
    phase = ctx.session.scalars(query).first()
    if phase is None:
        raise NotFound("No such phase in this benchmark.", {"phase_id": phase_id})
    if not is_open(phase, ctx.now()):
        raise Conflict(
            f"Phase {phase.name!r} is not open now.",
            {"starts_at": str(phase.starts_at), "ends_at": str(phase.ends_at)},
        )
    return phase


def default_phase(ctx: Context, benchmark: Benchmark) -> Phase:
    """The phase a run or a submission that names none goes to, whichever door sent it: the
    one open now (`phase_open_now`), never simply the first, which may have ended.

    Raises:
        Conflict: no phase is open now; the message says when the next opens, or that every
            phase has closed.
    """
    current = phase_open_now(ctx, benchmark)
    if current is not None:
        return current
    now = ctx.now()
    coming = [
        p for p in _phases_of(ctx, benchmark) if p.starts_at is not None and p.starts_at > now
    ]
    first = min(coming, key=lambda p: (p.starts_at, p.position)) if coming else None
    when = (
        f"phase {first.name!r} opens at {first.starts_at:%Y-%m-%d %H:%M} UTC"
        if first and first.starts_at
        else "every phase has closed"
    )
    raise Conflict(
        f"No `phase` to send this to: the phases of this benchmark are not open now ({when}).",
        {"field": "phase"},
    )


def phase_open_now(ctx: Context, benchmark: Benchmark) -> Phase | None:
    """The phase `default_phase` picks: the first by position that is open now, or None."""
    now = ctx.now()
    return next((phase for phase in _phases_of(ctx, benchmark) if is_open(phase, now)), None)


def _phases_of(ctx: Context, benchmark: Benchmark) -> list[Phase]:
    query = select(Phase).where(Phase.benchmark_id == benchmark.id).order_by(Phase.position)
    return list(ctx.session.scalars(query))


def is_open(phase: Phase, now: datetime) -> bool:
    """Whether the phase takes runs at `now`: from its start, until (not at) its end, as the
    phase pages' "closes" says and Codabench decides."""
    started = phase.starts_at is None or phase.starts_at <= now
    return started and (phase.ends_at is None or now < phase.ends_at)


def _scoring_for(ctx: Context, benchmark: Benchmark, model: Model) -> dict[str, Any]:
    """The benchmark's scoring settings, refused where they could not score this principal's
    run of `model`: the estimate and the start refuse alike."""
    settings = scoring.settings_for(benchmark)
    if settings.get("method") == "judge":
        judges.require_usable(ctx, benchmark)
    if settings.get("method") == "choice_logprob" and model.kind not in _model_specs.LOCAL_KINDS:
        raise Conflict(
            "Letter log-prob scoring needs a local model (GGUF or Hugging Face); this one is "
            f"{model.kind}. Use the 'choice' method for it."
        )
    return settings


def get_run(ctx: Context, run_id: str) -> RunView:
    """One run: its status, progress, cost and aggregate scores.

    Raises:
        NotFound: not launched by the user and not on a benchmark they own or collaborate on.
    """
    return view(ctx, access.require_run(ctx, run_id, Action.RUN_READ))


def list_runs(
    ctx: Context,
    benchmark_id: str | None = None,
    limit: int = 50,
    offset: int = 0,
    after: Newest | None = None,
    statuses: Collection[str] | None = None,
    mine: bool = False,
) -> list[RunView]:
    """Runs the user launched, plus every run on benchmarks they own or collaborate on (only
    the ones they launched when `mine`); newest first, starting after the run keyed `after`
    when given, then after `offset` more; only those of `statuses` when given.

    Raises:
        InvalidInput: limit outside 1..MAX_LIST or negative offset.
        NotFound: `benchmark_id` names no benchmark the user may see.
    """
    access.require(ctx, Action.BENCHMARK_LIST)
    check_window(limit, offset, MAX_LIST)
    if benchmark_id:  # an empty list would say "no runs" of a benchmark the user cannot see
        access.require_benchmark(ctx, benchmark_id, Action.BENCHMARK_READ)
    query = (
        select(Run)
        .join(Benchmark, Benchmark.id == Run.benchmark_id)
        .where(access.visible_runs(ctx))
    )
    if benchmark_id:
        query = query.where(Run.benchmark_id == benchmark_id)
    if statuses is not None:
        query = query.where(Run.status.in_(statuses))
    if mine:
        query = query.where(Run.launched_by == ctx.principal.user_id)
    query = newest_first(query, Run.created_at, Run.id, after)
    return _views(ctx, list(ctx.session.scalars(query.limit(limit).offset(offset))))


def _views(ctx: Context, rows: list[Run]) -> list[RunView]:
    """Views of a page of runs in a fixed number of queries: their models and benchmarks are
    loaded together, and the caller's roles on those benchmarks looked up in one batch."""
    model_ids = {r.model_id for r in rows if r.model_id}
    benchmark_ids = {r.benchmark_id for r in rows}
    models_ = ctx.session.scalars(select(Model).where(Model.id.in_(model_ids)))
    by_model = {model.id: model for model in models_}
    benchmarks = list(ctx.session.scalars(select(Benchmark).where(Benchmark.id.in_(benchmark_ids))))
    user = access.live_user(ctx)
    roles = access.roles_on_many(ctx, user, benchmarks) if user else {}
    by_benchmark = {benchmark.id: benchmark for benchmark in benchmarks}
    return [
        view(ctx, run, by_model.get(run.model_id or ""), by_benchmark.get(run.benchmark_id), roles)
        for run in rows
    ]


def cancel_run(ctx: Context, run_id: str) -> RunView:
    """Cancel a queued run at once (full refund) or ask a running one to stop (it settles what
    it used).

    Raises:
        NotFound: not visible.
        PermissionDenied: neither the launcher nor the benchmark's owner.
        Conflict: the run has already ended.
    """
    run = access.require_run(ctx, run_id, Action.RUN_CANCEL)
    # Read again under the row lock a starting worker takes (`execution.begin_run`): a run it
    # started in between is running, not queued, and must not be refunded.
    ctx.session.refresh(run, with_for_update=True)
    if run.status not in RUN_ACTIVE:
        raise Conflict(f"The run has already ended ({run.status}).", {"id": run.id})
    if run.status == RunStatus.QUEUED:
        if run.job_id:
            _enqueue.cancel_queued(ctx, run.job_id)
        if run.reservation_id:
            _ledger.refund_credits(ctx, run.reservation_id, "cancelled before it started")
        run.status, run.cost, run.finished_at = RunStatus.CANCELLED, 0, ctx.now()
        _log_writer.append(ctx, run.id, "Cancelled before it started; credits refunded")
    elif run.cancel_requested:
        return view(ctx, run)  # asked already: a second request changes nothing to record
    else:
        run.cancel_requested = True
        _log_writer.append(ctx, run.id, "Cancellation requested")
    audit.record(ctx, audit.AuditAction.RUN_CANCEL, "run", run.id)
    return view(ctx, run)


def view(
    ctx: Context,
    run: Run,
    model: Model | None = None,
    benchmark: Benchmark | None = None,
    roles: dict[str, frozenset[Role]] | None = None,
) -> RunView:
    """The public shape of a run for the acting principal (a list passes what it loaded for
    the whole page: the run's model and benchmark, and the caller's roles by benchmark)."""
    model = model or (ctx.session.get(Model, run.model_id) if run.model_id else None)
    benchmark = benchmark or ctx.session.get(Benchmark, run.benchmark_id)
    known = roles.get(run.benchmark_id) if roles is not None else None
    detail = bool(benchmark) and access.can(
        ctx, Action.RUN_READ_DETAIL, benchmark, run, roles=known
    )
    hidden = leaderboards.hidden_from(ctx, run, benchmark, roles=known)
    return RunView(
        id=run.id,
        benchmark_id=run.benchmark_id,
        phase_id=run.phase_id,
        model_id=run.model_id,
        model_name=leaderboards.entrant_name(run, model.name if model else None),
        status=RunStatus(run.status),
        benchmark_version=run.benchmark_version,
        scoring=dict(run.scoring),
        question_count=run.question_count,
        done_count=run.done_count,
        error_count=run.error_count,
        estimated_cost=run.estimated_cost,
        cost=run.cost,
        # The judge is asked with the key, and a verdict's wording sets its length: counted a
        # batch at a time, its tokens would tell an outsider the key's length and the verdicts.
        judge_input_tokens=run.judge_input_tokens if detail else 0,
        judge_output_tokens=run.judge_output_tokens if detail else 0,
        input_tokens=run.input_tokens,
        output_tokens=run.output_tokens,
        summary=leaderboards.shown_summary(scoring.visible_summary(run.summary, detail), hidden),
        scores=leaderboards.shown_scores(run.scores, hidden),
        score_edited=run.score_edit is not None,
        launched_by=run.launched_by,
        door=run.door,
        error=run.error,
        created_at=run.created_at,
        started_at=run.started_at,
        finished_at=run.finished_at,
        detail_visible=detail,
        settings=dict(run.settings or {}),
        partial=run.partial,
        retry_of=run.retry_of,
    )
