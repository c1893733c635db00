"""Retrying a finished run's errored questions as a new, linked, partial run: the original (which
may be on a leaderboard) is never changed."""

from __future__ import annotations

from sqlalchemy import select

from benchgen.core.context import Context
from benchgen.core.errors import Conflict, PermissionDenied
from benchgen.core.permissions import Action
from benchgen.core.statuses import RunStatus
from benchgen.db.tables import RunResult, RunSample
from benchgen.services import access
from benchgen.services.runs import launch
from benchgen.services.runs.execution import run_settings
from benchgen.services.runs.launch import RunView
from benchgen.services.runs.settings import RunOptions

# A failed run may be one whose every question errored: those are what a retry asks again.
RETRYABLE = frozenset({RunStatus.COMPLETED, RunStatus.CANCELLED, RunStatus.FAILED})


def retry_errored(ctx: Context, run_id: str) -> RunView:
    """Ask again only the questions that ended in an error, with the same model and settings,
    as a new run linked to the original (`retry_of`). It is launched like any run: the
    strangers' quota counts it and its estimate is reserved.

    Raises:
        NotFound: the run is not visible.
        PermissionDenied: the principal may not launch runs on the benchmark, or did not
            launch this run.
        Conflict: the run has not finished, has no errors, was no model run, or the benchmark's
            questions changed since; and whatever `start_run` raises.
    """
    run = access.require_run(ctx, run_id, Action.RUN_READ)
    # Launching is what a retry does: a principal that may not launch learns nothing more.
    benchmark = access.require_benchmark(ctx, run.benchmark_id, Action.RUN_LAUNCH)
    if run.launched_by != ctx.principal.user_id:
        raise PermissionDenied("Only the person who launched a run may retry its errors.")
    if run.status not in RETRYABLE:
        raise Conflict(f"Only a finished run's errors can be retried ({run.status}).")
    if run.model_id is None or benchmark.format == "custom":
        raise Conflict("Only a model's run on questions can be retried.", {"id": run.id})
    if benchmark.version != run.benchmark_version:
        raise Conflict("The benchmark's questions changed since this run; start a new run.")
    errored = _errored_positions(ctx, run.id)
    if not errored:
        raise Conflict("This run has no errored questions to retry.", {"id": run.id})
    options = RunOptions(settings=run_settings(run), cache=bool(run.settings.get("cache")))
    return launch.launch_run(
        ctx, run.benchmark_id, run.model_id, run.phase_id, options, errored, retry_of=run.id
    )


def _errored_positions(ctx: Context, run_id: str) -> list[int]:
    """Questions whose answer, or any of whose samples, ended in an error."""
    first = ctx.session.scalars(
        select(RunResult.position).where(RunResult.run_id == run_id, RunResult.error.is_not(None))
    )
    extra = ctx.session.scalars(
        select(RunSample.position).where(RunSample.run_id == run_id, RunSample.error.is_not(None))
    )
    return sorted(set(first) | set(extra))
