"""Retrying a finished run's errored questions as a new, linked, partial run: the original (which
may be on a leaderboard) is never changed."""

from __future__ import annotations

from sqlalchemy import select

from benchgen.core.context import Context
from benchgen.core.errors import Conflict, InvalidInput, NotFound, PermissionDenied
from benchgen.core.permissions import Action
from benchgen.core.statuses import RUN_ACTIVE, RunStatus
from benchgen.db.tables import Run, RunResult, RunSample
from benchgen.services import _model_specs, access
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
        Conflict: the run has not finished, has no errors, was no model run, the benchmark's
            questions changed since, an earlier retry of it has not finished, or its own
            settings no longer fit the model or the benchmark's scoring; and whatever
            `start_run` raises (but the model's removal is this Conflict: the run is there).
    """
    run = access.require_run(ctx, run_id, Action.RUN_READ)
    # Launching is what a retry does: a principal that may not launch learns nothing more.
    benchmark = access.require_benchmark(ctx, run.benchmark_id, Action.RUN_LAUNCH)
    if run.launched_by != ctx.principal.user_id:
        raise PermissionDenied("Only the person who launched a run may retry its errors.")
    # Locked so that two retries asked at once find each other: the second would reserve
    # credits again and ask the same questions a second time.
    ctx.session.refresh(run, with_for_update=True)
    if run.status not in RETRYABLE:
        raise Conflict(f"Only a finished run's errors can be retried ({run.status}).")
    if run.model_id is None or benchmark.format == "custom":
        raise Conflict("Only a model's run on questions can be retried.", {"id": run.id})
    if benchmark.version != run.benchmark_version:
        raise Conflict("The benchmark's questions changed since this run; start a new run.")
    _require_no_retry_under_way(ctx, run.id)
    errored = _errored_positions(ctx, run.id)
    if not errored:
        raise Conflict("This run has no errored questions to retry.", {"id": run.id})
    _require_model(ctx, run.model_id)
    options = RunOptions(settings=run_settings(run), cache=bool(run.settings.get("cache")))
    try:
        return launch.launch_run(
            ctx, run.benchmark_id, run.model_id, run.phase_id, options, errored, retry_of=run.id
        )
    except InvalidInput as exc:
        # The settings are the run's own, not the request's (a retry sends none): a 422 at a
        # place in a body nobody sent left the client nothing to fix.
        raise Conflict(
            f"This run's own settings no longer fit ({exc.message}); start a new run.",
            {"id": run.id},
        ) from None


def _require_model(ctx: Context, model_id: str) -> None:
    # The launcher's own model or a platform one: only its removal hides it. Launching would
    # answer 404, which reads as if the run itself were gone.
    try:
        _model_specs.usable_model(ctx, model_id)
    except NotFound:
        raise Conflict(
            "The model this run used has been removed; start a new run with another model.",
            {"model_id": model_id},
        ) from None


def _require_no_retry_under_way(ctx: Context, run_id: str) -> None:
    pending = ctx.session.scalar(
        select(Run.id).where(Run.retry_of == run_id, Run.status.in_(RUN_ACTIVE)).limit(1)
    )
    if pending is not None:
        raise Conflict(
            "This run's errors are already being retried; wait for that run to finish.",
            {"id": pending},
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
