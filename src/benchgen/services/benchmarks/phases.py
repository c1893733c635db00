"""Phases and tasks (qa/mcq get one of each; adding or removing is session-only), phase limits."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select

from benchgen.core.context import Context
from benchgen.core.errors import Conflict, NotFound, RateLimited, invalid
from benchgen.core.ids import new_id
from benchgen.core.permissions import Action
from benchgen.core.statuses import RunStatus
from benchgen.core.text import require_line
from benchgen.db.tables import Benchmark, Phase, PhaseTask, Run, Task
from benchgen.services import access, audit
from benchgen.services.accounts import users

DAY = timedelta(days=1)
UNSCORED_ENDS = frozenset({RunStatus.FAILED, RunStatus.CANCELLED})


@dataclass(frozen=True)
class PhaseView:
    """A phase with the ids of the tasks active in it."""

    id: str
    name: str
    position: int
    starts_at: datetime | None
    ends_at: datetime | None
    task_ids: list[str]


@dataclass(frozen=True)
class TaskView:
    """A task of a benchmark: its name and the data it uses."""

    id: str
    name: str
    data_ref: str


def create_default_phase(ctx: Context, benchmark: Benchmark) -> Phase:
    """The one phase and one task every new qa/mcq benchmark gets (part of creating it)."""
    task = Task(id=new_id("tsk"), benchmark_id=benchmark.id, name="Questions", scoring={})
    phase = Phase(id=new_id("ph"), benchmark_id=benchmark.id, name="Main", position=0)
    ctx.session.add_all([task, phase])
    ctx.session.flush()
    ctx.session.add(PhaseTask(phase_id=phase.id, task_id=task.id))
    return phase


def list_phases(ctx: Context, benchmark_id: str) -> list[PhaseView]:
    """The benchmark's phases in order.

    Raises:
        NotFound: not visible to the principal.
    """
    access.require_benchmark(ctx, benchmark_id, Action.BENCHMARK_READ)
    rows = ctx.session.scalars(
        select(Phase).where(Phase.benchmark_id == benchmark_id).order_by(Phase.position)
    )
    return [_view(ctx, row) for row in rows]


def list_tasks(ctx: Context, benchmark_id: str) -> list[TaskView]:
    """The benchmark's tasks, by name.

    Raises:
        NotFound: not visible to the principal.
    """
    access.require_benchmark(ctx, benchmark_id, Action.BENCHMARK_READ)
    rows = ctx.session.scalars(
        select(Task).where(Task.benchmark_id == benchmark_id).order_by(Task.name, Task.id)
    )
    return [TaskView(row.id, row.name, row.data_ref) for row in rows]


def add_phase(
    ctx: Context,
    benchmark_id: str,
    name: str,
    starts_at: datetime | None = None,
    ends_at: datetime | None = None,
    task_ids: list[str] | None = None,
) -> PhaseView:
    """Add a phase (owner, web app or CLI only) running the given tasks of this benchmark.

    Raises:
        NotFound: benchmark or a task not found.
        PermissionDenied: not the owner, or a token or the agent asked.
        InvalidInput: empty name (or one with control or invisible characters), an end
            before the start, or (custom benchmarks) no task.
    """
    # Held exclusively: two phases added at once read the same highest position (PostgreSQL),
    # and both took the place after it.
    benchmark = access.require_held(ctx, benchmark_id, Action.PHASES_MANAGE, exclusive=True)
    label = name.strip()
    if not 1 <= len(label) <= 200:
        raise invalid(["name"], "must be 1 to 200 characters")
    label = require_line(label, ["name"])
    if starts_at and ends_at and ends_at <= starts_at:
        raise invalid(["ends_at"], "must be after the start")
    # A form may name a task twice: its second link would break the link table's key (a 500).
    tasks = [_task(ctx, benchmark.id, task_id) for task_id in dict.fromkeys(task_ids or [])]
    if not tasks and benchmark.format == "custom":
        # Its runs would have nothing to evaluate, as a bundle's phase without tasks would.
        raise invalid(["task_ids"], "a phase of a custom benchmark runs at least one task")
    position = ctx.session.scalar(
        select(func.coalesce(func.max(Phase.position), -1)).where(
            Phase.benchmark_id == benchmark.id
        )
    )
    phase = Phase(
        id=new_id("ph"),
        benchmark_id=benchmark.id,
        name=label,
        position=int(position if position is not None else -1) + 1,
        starts_at=starts_at,
        ends_at=ends_at,
    )
    ctx.session.add(phase)
    ctx.session.flush()
    ctx.session.add_all([PhaseTask(phase_id=phase.id, task_id=task.id) for task in tasks])
    audit.record(
        ctx, audit.AuditAction.PHASE_ADD, "benchmark", benchmark.id, phase_id=phase.id, name=label
    )
    return _view(ctx, phase)


def remove_phase(ctx: Context, benchmark_id: str, phase_id: str) -> None:
    """Remove a phase (owner, web app or CLI only); a benchmark keeps at least one.

    Raises:
        NotFound: benchmark or phase not found.
        PermissionDenied: not the owner, or a token or the agent asked.
        Conflict: it is the last phase, or runs were made in it.
    """
    # Held exclusively: a run starting in the phase (which holds it shared) is either counted
    # below or refused after, never made in a phase removed under it.
    benchmark = access.require_held(ctx, benchmark_id, Action.PHASES_MANAGE, exclusive=True)
    phase = _phase(ctx, benchmark.id, phase_id)
    count = ctx.session.scalar(
        select(func.count()).select_from(Phase).where(Phase.benchmark_id == benchmark.id)
    )
    if (count or 0) <= 1:
        raise Conflict("A benchmark keeps at least one phase.", {"id": phase_id})
    runs = ctx.session.scalar(select(func.count()).select_from(Run).where(Run.phase_id == phase.id))
    if runs:
        # Its runs, their results and its leaderboard would lose the phase they were made in.
        raise Conflict(
            f"The phase '{phase.name}' has {runs} run(s): it cannot be removed, as its runs "
            "and its leaderboard keep the phase they were made in.",
            {"id": phase_id},
        )
    ctx.session.delete(phase)
    audit.record(ctx, audit.AuditAction.PHASE_REMOVE, "benchmark", benchmark.id, phase_id=phase_id)


BUNDLE_TASKS = (
    "a custom benchmark's tasks come from its bundle, each with its scoring program: add the "
    "task to competition.yaml and upload the bundle as a new version"
)


def add_task(ctx: Context, benchmark_id: str, name: str, phase_ids: list[str]) -> str:
    """Add a task (owner, web app or CLI only) and make it active in the given phases.

    Raises:
        NotFound: benchmark or a phase not found.
        PermissionDenied: not the owner, or a token or the agent asked.
        InvalidInput: empty name (or one with control or invisible characters), no phase,
            or a custom benchmark (its tasks come from its bundle).
    """
    # Held exclusively: a phase removed meanwhile left this task's link to it a broken key.
    benchmark = access.require_held(ctx, benchmark_id, Action.PHASES_MANAGE, exclusive=True)
    if benchmark.format == "custom":
        # A task made here has no scoring program: runs skipped it, and a phase with only such
        # tasks evaluated nothing at all.
        raise invalid(["name"], BUNDLE_TASKS)
    label = name.strip()
    if not 1 <= len(label) <= 200:
        raise invalid(["name"], "must be 1 to 200 characters")
    label = require_line(label, ["name"])
    if not phase_ids:
        raise invalid(["phase_ids"], "a task must be active in at least one phase")
    phases = [_phase(ctx, benchmark.id, phase_id) for phase_id in dict.fromkeys(phase_ids)]
    task = Task(id=new_id("tsk"), benchmark_id=benchmark.id, name=label, scoring={})
    ctx.session.add(task)
    ctx.session.flush()
    ctx.session.add_all(PhaseTask(phase_id=phase.id, task_id=task.id) for phase in phases)
    audit.record(
        ctx, audit.AuditAction.TASK_ADD, "benchmark", benchmark.id, task_id=task.id, name=label
    )
    return task.id


def remove_task(ctx: Context, benchmark_id: str, task_id: str) -> None:
    """Remove a task (owner, web app or CLI only); a benchmark keeps at least one.

    Raises:
        NotFound: benchmark or task not found.
        PermissionDenied: not the owner, or a token or the agent asked.
        Conflict: it is the last task, or (custom benchmarks) the only one of a phase.
    """
    # Held exclusively: two removals at once each counted the other's task, and removed both.
    benchmark = access.require_held(ctx, benchmark_id, Action.PHASES_MANAGE, exclusive=True)
    task = _task(ctx, benchmark.id, task_id)
    count = ctx.session.scalar(
        select(func.count()).select_from(Task).where(Task.benchmark_id == benchmark.id)
    )
    if (count or 0) <= 1:
        raise Conflict("A benchmark keeps at least one task.", {"id": task_id})
    stranded = _run_only(ctx, task) if benchmark.format == "custom" else None
    if stranded is not None:
        raise Conflict(
            f"The task '{task.name}' is the only one phase '{stranded.name}' runs: its runs "
            "would have nothing to evaluate. Remove the phase, or give it another task first.",
            {"id": task_id, "phase_id": stranded.id},
        )
    ctx.session.delete(task)
    audit.record(ctx, audit.AuditAction.TASK_REMOVE, "benchmark", benchmark.id, task_id=task_id)


def check_limits(ctx: Context, phase: Phase) -> None:
    """The bundle's `max_submissions` and `max_submissions_per_day`, per user and phase, over
    the runs that count (`_counts`): submissions and model runs alike, since a model the user
    registered can answer whatever they like and its scores teach as much as a submission's.

    Raises:
        Conflict: `max_submissions` is used.
        RateLimited: `max_submissions_per_day` is used; `retry_at` says when a slot frees.
    """
    user_id = ctx.principal.user_id
    assert user_id is not None  # RUN_LAUNCH is only ever allowed to a user
    # Held until this run is stored: two sent at the same moment both found the last
    # free slot (PostgreSQL; SQLite's write transaction already serialises them).
    users.lock_user(ctx, user_id)
    times = _counted_times(ctx, phase.id, user_id)
    total_cap = phase.rules.get("max_submissions")
    if total_cap is not None and len(times) >= int(total_cap):
        # Said as counts: a new bundle version may have lowered the cap below what was made.
        raise Conflict(
            f"You have used {len(times)} of the {total_cap} submissions phase {phase.name!r} "
            "allows.",
            {"phase_id": phase.id, "max_submissions": total_cap, "made": len(times)},
        )
    daily_cap = phase.rules.get("max_submissions_per_day")
    if daily_cap is None:
        return
    today = [at for at in times if at > ctx.now() - DAY]
    if len(today) >= int(daily_cap):
        retry_at = today[len(today) - int(daily_cap)] + DAY
        raise RateLimited(
            f"Phase {phase.name!r} allows {daily_cap} submissions per day; allowed again at "
            f"{retry_at:%Y-%m-%d %H:%M:%S} UTC.",
            retry_at,
            int(daily_cap),
            "day",
        )


def _counted_times(ctx: Context, phase_id: str, user_id: str) -> list[datetime]:
    """When the user's runs in the phase that count were made, oldest first."""
    rows = ctx.session.execute(
        select(Run.created_at, Run.status, Run.summary)
        .where(Run.phase_id == phase_id, Run.launched_by == user_id)
        .order_by(Run.created_at)
    )
    return [at for at, status, summary in rows if _counts(status, summary)]


def _counts(status: str, summary: dict[str, Any]) -> bool:
    """Whether a run uses up a slot: yes, unless it ended (failed or cancelled) before
    any task scored it. The limits bound what a participant learns of the hidden data, and
    such a one (the platform's failure, results the scorer could not read) taught nothing.
    Codabench leaves out every failed submission; here one that ended after a task's scores
    (kept as each task ends) counts, or failing the last task would make scores free."""
    if status not in UNSCORED_ENDS:
        return True
    return any((summary or {}).get("tasks", {}).values())


def _run_only(ctx: Context, task: Task) -> Phase | None:
    """The first phase that runs `task` and no other, if any."""
    others = (
        select(PhaseTask.phase_id)
        .join(Task, Task.id == PhaseTask.task_id)
        .where(Task.benchmark_id == task.benchmark_id, Task.id != task.id)
    )
    query = (
        select(Phase)
        .join(PhaseTask, PhaseTask.phase_id == Phase.id)
        .where(PhaseTask.task_id == task.id, Phase.id.not_in(others))
        .order_by(Phase.position)
    )
    return ctx.session.scalars(query.limit(1)).first()


def _phase(ctx: Context, benchmark_id: str, phase_id: str) -> Phase:
    phase = ctx.session.get(Phase, phase_id)
    if phase is None or phase.benchmark_id != benchmark_id:
        raise NotFound("No such phase in this benchmark.", {"id": phase_id})
    return phase


def _task(ctx: Context, benchmark_id: str, task_id: str) -> Task:
    task = ctx.session.get(Task, task_id)
    if task is None or task.benchmark_id != benchmark_id:
        raise NotFound("No such task in this benchmark.", {"id": task_id})
    return task


def _view(ctx: Context, phase: Phase) -> PhaseView:
    task_ids = list(
        ctx.session.scalars(
            select(PhaseTask.task_id)
            .where(PhaseTask.phase_id == phase.id)
            .order_by(PhaseTask.task_id)
        )
    )
    return PhaseView(phase.id, phase.name, phase.position, phase.starts_at, phase.ends_at, task_ids)
