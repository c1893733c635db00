"""Executing a run on a custom benchmark (system principal only): unpack the run's bundle version,
evaluate each task of its phase in the sandbox — an uploaded submission, or a catalogue model
through the per-run proxy or the platform's own engine — and close the run with its scores."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from sqlalchemy import select

from benchgen.bundles.archive import extract_zip, zip_plain_files
from benchgen.bundles.competition import CompetitionSpec, LeaderboardSpec
from benchgen.bundles.evaluation import (
    Environment,
    Submission,
    TaskOutcome,
    combine_scores,
    evaluate_task,
    scored_columns,
)
from benchgen.bundles.layout import LoadedBundle, ResolvedTask, load_bundle
from benchgen.bundles.trees import scratch_folder
from benchgen.core.config import Settings
from benchgen.core.context import Context
from benchgen.core.errors import InvalidInput
from benchgen.core.permissions import Action
from benchgen.core.statuses import RUN_FINAL, RunStatus
from benchgen.db.tables import BundleVersion, Model, Phase, PhaseTask, Run, Task
from benchgen.evals.types import ModelSpec
from benchgen.services import _model_specs, access
from benchgen.services._artifacts import store_for
from benchgen.services.accounts import _ledger
from benchgen.services.benchmarks import _bundle_versions
from benchgen.services.runs import _log_writer, _model_calls, leaderboards, notifications


@dataclass(frozen=True)
class BundlePlan:
    """What a worker needs to evaluate one custom run, outside any transaction."""

    run_id: str
    storage_key: str
    task_indexes: list[int]
    leaderboard: LeaderboardSpec
    submission: dict[str, Any] | None
    model: ModelSpec | None
    prices: tuple[int, int]
    budget: int
    max_calls: int
    max_reply_chars: int  # a reply written to the predictions is clipped to this (`_replies`)
    time_limit_s: int | None = None  # the phase's execution_time_limit, per program


@dataclass
class BundleReport:
    """How the evaluation went: per-task outcomes, the model's usage, and why it stopped."""

    outcomes: list[TaskOutcome] = field(default_factory=list)
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    error: str | None = None
    cancelled: bool = False


def begin_bundle_run(ctx: Context, run_id: str) -> BundlePlan | None:
    """Mark the run running and plan it; None when there is nothing to do."""
    access.require(ctx, Action.RUN_EXECUTE)
    # Locked, as `execution.begin_run` is: a cancel in between must not refund a run that runs.
    run = ctx.session.get(Run, run_id, with_for_update=True, populate_existing=True)
    if run is None or run.status in RUN_FINAL:
        return None
    if run.cancel_requested:
        _close(ctx, run, RunStatus.CANCELLED, BundleReport(cancelled=True))
        return None
    version = ctx.session.scalars(
        select(BundleVersion).where(
            BundleVersion.benchmark_id == run.benchmark_id,
            BundleVersion.version == run.benchmark_version,
        )
    ).one()
    competition = _bundle_versions.competition_of(version)
    indexes = _phase_tasks(ctx, run.phase_id, competition)
    model = ctx.session.get(Model, run.model_id) if run.model_id else None
    spec = _model_specs.model_spec(ctx, model) if model else None
    prices = (model.price_per_question, model.price_per_1k_tokens) if model else (0, 0)
    run.status, run.started_at = RunStatus.RUNNING, run.started_at or ctx.now()
    _log_writer.append(ctx, run.id, f"Started: {len(indexes)} task(s) of bundle v{version.version}")
    phase = ctx.session.get(Phase, run.phase_id) if run.phase_id else None
    return BundlePlan(
        run.id,
        version.storage_key,
        indexes,
        competition.leaderboards[0],
        dict(run.submission) if run.submission else None,
        spec,
        prices,
        run.estimated_cost,
        ctx.settings.custom_run_model_calls,
        ctx.settings.max_reply_chars,
        phase.rules.get("execution_time_limit") if phase else None,
    )


def _phase_tasks(ctx: Context, phase_id: str, competition: CompetitionSpec) -> list[int]:
    """The bundle task indexes the phase runs, less those the run's bundle version lacks: a
    version uploaded while the run waited may have added tasks to the phase, and the run is
    evaluated with the bundle it was made on (looking one up there failed every attempt)."""
    refs = ctx.session.scalars(
        select(Task.data_ref)
        .join(PhaseTask, PhaseTask.task_id == Task.id)
        .where(PhaseTask.phase_id == phase_id)
    )
    known = {task.index for task in competition.tasks}
    indexes = (int(ref.split(":", 1)[1]) for ref in refs if ref.startswith("bundle:"))
    return sorted(index for index in indexes if index in known)


@dataclass(frozen=True)
class DoneTask:
    """One evaluated task, ready to record: its outcome, and what was scored zipped (None when
    nothing was kept)."""

    outcome: TaskOutcome
    predictions: Path | None


def perform_bundle_run(
    settings: Settings,
    plan: BundlePlan,
    record: Callable[[DoneTask], bool],
    cancelled: Callable[[], bool],
) -> BundleReport:
    """Evaluate every task of the plan (no database). `record` keeps each evaluated task (the
    caller's `record_task`) and answers False once the run is no longer this worker's: the
    evaluation then stops. The caller records the report."""
    report = BundleReport()
    env = _bundle_versions.environment(settings, plan.time_limit_s)
    with scratch_folder("custom-run-") as work:
        try:
            loaded = _load(settings, plan, work)
        except InvalidInput as exc:
            report.error = f"the bundle could not be unpacked: {exc}"
            return report
        except OSError as exc:  # its text names the host file: the run's readers get why only
            report.error = f"the bundle could not be unpacked: {exc.strerror or 'a read error'}"
            return report
        for index in plan.task_indexes:
            if cancelled():
                report.cancelled = True
                break
            place = work / f"task-{index}"
            place.mkdir()
            outcome = _evaluate(settings, plan, loaded.tasks[index], place, env, report)
            done = _pack(outcome, work / f"predictions-{index}.zip")
            if not record(done):
                break  # another worker took the run over: it evaluates the tasks again
            report.outcomes.append(done.outcome)
            if done.outcome.error:
                report.error = f"task {index}: {done.outcome.error}"
                break
    return report


def _load(settings: Settings, plan: BundlePlan, work: Path) -> LoadedBundle:
    root = work / "bundle"
    root.mkdir()
    limits = _bundle_versions.archive_limits(settings)
    extract_zip(store_for(settings).read_bytes(plan.storage_key), root, limits)
    return load_bundle(root, limits)


def _evaluate(
    settings: Settings,
    plan: BundlePlan,
    task: ResolvedTask,
    place: Path,
    env: Environment,
    report: BundleReport,
) -> TaskOutcome:
    if plan.submission is not None:
        unpacked = place / "submission"
        unpacked.mkdir()
        data = store_for(settings).read_bytes(plan.submission["key"])
        limits = _bundle_versions.archive_limits(settings)
        try:
            extract_zip(data, unpacked, limits, loc="submission")
        except InvalidInput as exc:  # the same on every try: a failed task, not a job to retry
            return TaskOutcome(task.spec.index, {}, [], f"the submission was refused: {exc}", None)
        is_code = task.ingestion_program is not None and plan.submission["kind"] == "code"
        chosen = Submission(code=unpacked) if is_code else Submission(results=unpacked)
        return evaluate_task(task, place, env, chosen, scored_columns(plan.leaderboard))
    assert plan.model is not None  # a run is a submission or a model's
    return _model_calls.evaluate_with_model(task, place, env, plan, report)


def _pack(outcome: TaskOutcome, archive: Path) -> DoneTask:
    """Zip what was scored into `archive`, so the run can be rescored later without asking
    anyone again; the outcome fails when the folder cannot be kept (a program nested it too
    deep)."""
    if outcome.predictions is None:
        return DoneTask(outcome, None)
    try:
        zip_plain_files(outcome.predictions, archive)  # the program wrote it: no link followed
    except InvalidInput as exc:
        error = outcome.error or f"its predictions cannot be kept: {exc}"
        return DoneTask(replace(outcome, scores={}, error=error), None)
    return DoneTask(outcome, archive)


def record_task(ctx: Context, run_id: str, done: DoneTask) -> None:
    """Keep one evaluated task's predictions, its programs' output and its scores, and log how
    it went."""
    access.require(ctx, Action.RUN_EXECUTE)
    store = store_for(ctx.settings)
    outcome, index = done.outcome, done.outcome.task_index
    if done.predictions is not None:
        store.put_file(f"runs/{run_id}/predictions/task-{index}.zip", done.predictions)
    store.put_bytes(
        f"runs/{run_id}/program-output/task-{index}.txt",
        outcome.printed().encode("utf-8", "replace"),
    )
    run = ctx.session.get(Run, run_id)
    # The log is its launcher's to read: a hidden column's score stays out of it (the run's
    # page shows it to the organisers).
    hidden = leaderboards.hidden_from(ctx, run) if run is not None else frozenset()
    scores = leaderboards.shown_scores(outcome.scores, hidden)
    status = f"error: {outcome.error}" if outcome.error else f"scores {scores}"
    _log_writer.append(ctx, run_id, f"Task {index}: {status}")
    if run is not None:
        # Kept as each task ends, as the log shows them: a run that ends without finishing
        # (its worker gone) still counts against the phase's submission limits
        # (`phases.check_limits`).
        tasks = {**(run.summary or {}).get("tasks", {}), str(index): outcome.scores}
        run.summary = {**(run.summary or {}), "tasks": tasks}


def finish_bundle_run(ctx: Context, run_id: str, report: BundleReport) -> None:
    """Record the scores (or the failure), settle the model's real cost, close the run."""
    access.require(ctx, Action.RUN_EXECUTE)
    run = ctx.session.get(Run, run_id)
    if run is None or run.status in RUN_FINAL:
        return
    version = ctx.session.scalars(
        select(BundleVersion).where(
            BundleVersion.benchmark_id == run.benchmark_id,
            BundleVersion.version == run.benchmark_version,
        )
    ).one()
    leaderboard = _bundle_versions.competition_of(version).leaderboards[0]
    run.done_count = sum(1 for o in report.outcomes if o.error is None)
    run.error_count = sum(1 for o in report.outcomes if o.error is not None)
    run.input_tokens, run.output_tokens = report.input_tokens, report.output_tokens
    run.summary = {"tasks": {str(o.task_index): o.scores for o in report.outcomes}}
    status = RunStatus.CANCELLED if report.cancelled else RunStatus.COMPLETED
    if report.error is None and not report.cancelled:
        try:
            run.scores = combine_scores(report.outcomes, leaderboard)
        except InvalidInput as exc:
            report.error = str(exc)
    if report.error is not None:
        status, run.error = RunStatus.FAILED, report.error[:2000]
    _close(ctx, run, status, report)


def _close(ctx: Context, run: Run, status: RunStatus, report: BundleReport) -> None:
    model = ctx.session.get(Model, run.model_id) if run.model_id else None
    price_q, price_t = (model.price_per_question, model.price_per_1k_tokens) if model else (0, 0)
    tokens = report.input_tokens + report.output_tokens
    used = report.calls * price_q + math.ceil(tokens * price_t / 1000)
    run.cost = min(used, run.estimated_cost)
    if run.reservation_id:
        _ledger.settle_credits(ctx, run.reservation_id, run.cost)
    run.status, run.finished_at = status, ctx.now()
    detail = f" — {run.error}" if status == RunStatus.FAILED else ""
    _log_writer.append(
        ctx,
        run.id,
        f"{status.capitalize()}: {run.done_count}/{run.question_count} task(s), "
        f"{report.calls} model call(s), {run.cost} credits{detail}",
    )
    notifications.notify_run_finished(ctx, run.id)


def program_output(ctx: Context, run_id: str) -> dict[str, str]:
    """The programs' stdout and stderr for each task of a custom run (the benchmark's team only:
    a scoring program may print reference data).

    Raises:
        NotFound / PermissionDenied: not the benchmark's owner or a collaborator.
    """
    run = access.require_run(ctx, run_id, Action.RUN_READ)
    access.require_benchmark(ctx, run.benchmark_id, Action.BENCHMARK_READ_KEY)
    store = store_for(ctx.settings)
    found = {}
    for key in store.keys(f"runs/{run.id}/program-output"):
        found[Path(key).stem] = store.read_bytes(key).decode("utf-8", "replace")
    return found
