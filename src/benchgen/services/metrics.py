"""What operators watch: queue depth, job ages, lost leases, runs and training jobs by status,
as Prometheus text (for the `/metrics` scrape, which holds the operator's metrics token)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import func, select

from benchgen.core.context import Context
from benchgen.core.permissions import Action
from benchgen.core.statuses import JobStatus
from benchgen.db.tables import Job, Run, TrainingJob
from benchgen.services import access

_HELP = {
    "benchgen_jobs": ("gauge", "Jobs in the job table by kind and status (queued, running)."),
    "benchgen_job_oldest_queued_seconds": ("gauge", "Age of the oldest due job no worker holds."),
    "benchgen_jobs_lease_expired": ("gauge", "Running jobs whose worker stopped answering."),
    "benchgen_runs": ("gauge", "Runs by status."),
    "benchgen_training_jobs": ("gauge", "Training jobs by status."),
}


def render_metrics(ctx: Context) -> str:
    """The deployment's metrics in the Prometheus text format (0.0.4).

    Raises:
        PermissionDenied: the principal does not hold the metrics grant.
    """
    access.require(ctx, Action.METRICS_READ)
    now = ctx.now()
    samples: dict[str, list[tuple[dict[str, str], float]]] = {name: [] for name in _HELP}
    for kind, status, count in ctx.session.execute(
        select(Job.kind, Job.status, func.count())
        .where(Job.status.in_([JobStatus.QUEUED, JobStatus.RUNNING]))
        .group_by(Job.kind, Job.status)
    ):
        samples["benchgen_jobs"].append(({"kind": kind, "status": status}, count))
    for kind, oldest in ctx.session.execute(
        select(Job.kind, func.min(Job.run_after))
        .where(Job.status == JobStatus.QUEUED, Job.run_after <= now)
        .group_by(Job.kind)
    ):
        samples["benchgen_job_oldest_queued_seconds"].append(({"kind": kind}, _age(now, oldest)))
    for kind, count in ctx.session.execute(
        select(Job.kind, func.count())
        .where(Job.status == JobStatus.RUNNING, Job.lease_expires_at < now)
        .group_by(Job.kind)
    ):
        samples["benchgen_jobs_lease_expired"].append(({"kind": kind}, count))
    for table, name in ((Run, "benchgen_runs"), (TrainingJob, "benchgen_training_jobs")):
        for status, count in ctx.session.execute(
            select(table.status, func.count()).group_by(table.status)
        ):
            samples[name].append(({"status": status}, count))
    return "".join(_family(name, rows) for name, rows in samples.items())


def _age(now: datetime, then: datetime | None) -> float:
    return max((now - then).total_seconds(), 0.0) if then is not None else 0.0


def _family(name: str, rows: list[tuple[dict[str, str], float]]) -> str:
    kind, text = _HELP[name]
    lines = [f"# HELP {name} {text}", f"# TYPE {name} {kind}"]
    for labels, value in rows:
        shown = ",".join(f'{key}="{_escaped(v)}"' for key, v in sorted(labels.items()))
        lines.append(f"{name}{{{shown}}} {float(value):g}")
    return "\n".join(lines) + "\n"


def _escaped(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
