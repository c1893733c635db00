"""One training job's page: its plan and progress, the live loss chart and log (polled as JSON),
cancelling it, and deleting it once it has ended (typed confirmation)."""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Form, Query, Request
from fastapi.responses import Response

from benchgen.core.context import Context
from benchgen.core.statuses import TRAINING_FINAL
from benchgen.services.training import jobs
from benchgen.services.training.jobs import TrainingJobView, TrainingLogLine
from benchgen.web.confirmations import confirmed
from benchgen.web.pages import training_form
from benchgen.web.pages.question_form import Problems
from benchgen.web.session import WebContext, csrf_checked
from benchgen.web.templating import redirect, render

router = APIRouter(dependencies=[Depends(csrf_checked)], include_in_schema=False)
LOG_BATCH = 5000
# The page reads at most this many log lines (one per step and a few more): the chart of a
# longer job starts at its first steps and the poll brings the rest.
PAGE_LINES = 4 * LOG_BATCH
LOG_SHOWN = 300
POLL_BATCH = 1000
MAX_LOG_ID = 2**31 - 1


@router.get("/training/{training_id}", name="training_job")
def training_job_page(request: Request, ctx: WebContext, training_id: str) -> Response:
    """The job: status (and what a queued job waits for), plan, progress, credits, the loss
    chart, the log, and the Trained model once it completed."""
    return _job_page(request, ctx, jobs.get_training_job(ctx, training_id), Problems())


@router.get("/training/{training_id}/progress", name="training_progress")
def training_progress(
    ctx: WebContext,
    training_id: str,
    after: Annotated[int, Query(ge=0, le=MAX_LOG_ID)] = 0,
) -> Response:
    """What the page's script polls: new log lines and loss points after the line `after`,
    and the job's progress. Each poll is a request of its own, so the session is checked
    again every time: after a sign-out the next poll is sent to the sign-in page."""
    job = jobs.get_training_job(ctx, training_id)
    lines = jobs.read_training_log(ctx, training_id, after, POLL_BATCH)
    body = {
        **progress_of(job),
        "after": lines[-1].id if lines else after,
        "more": len(lines) == POLL_BATCH,
        "lines": [line.line for line in lines],
        "points": loss_points(lines),
    }
    # Escaped as the pages' JSON blocks are: log lines hold names a user typed, and no
    # sniffing browser or careless reader should ever meet them as markup.
    text = json.dumps(body).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return Response(text, media_type="application/json", headers={"Cache-Control": "no-store"})


@router.post("/training/{training_id}/cancel", name="training_cancel")
def training_cancel(request: Request, ctx: WebContext, training_id: str) -> Response:
    """Cancel a queued job at once, or ask a running one to stop after its current step."""
    done = jobs.cancel_training_job(ctx, training_id)
    note = (
        "Cancelled." if done.status in TRAINING_FINAL else "Asked the job to stop after this step."
    )
    return redirect(request, "training_job", flash=note, training_id=training_id)


@router.post("/training/{training_id}/delete", name="training_delete")
def training_delete(
    request: Request,
    ctx: WebContext,
    training_id: str,
    confirm: Annotated[str, Form(max_length=400)] = "",
) -> Response:
    """Remove an ended job from my list once its name is typed; its Trained model stays."""
    job = jobs.get_training_job(ctx, training_id)
    # Checked here too: the browser's check is a convenience a forged or scripted form skips.
    if not confirmed(confirm, job.name):
        problems = Problems()
        problems.add("confirm", "Confirmation", "type the job's name exactly to delete it")
        return _job_page(request, ctx, job, problems, 422)
    jobs.delete_training_job(ctx, training_id)
    return redirect(request, "training", flash=f"Deleted the training job “{job.name}”.")


def progress_of(job: TrainingJobView) -> dict[str, Any]:
    """The numbers the progress bar and status show."""
    total = job.total_steps
    percent = 100 if total == 0 else min(100, job.steps_done * 100 // total)
    return {
        "status": job.status.value,
        "steps_done": job.steps_done,
        "total_steps": total,
        "percent": percent,
        "final": job.status in TRAINING_FINAL,
    }


def loss_points(lines: list[TrainingLogLine]) -> list[dict[str, float]]:
    """The loss per step, as the chart's {x, y} points."""
    return [
        {"x": line.step, "y": round(line.loss, 6)}
        for line in lines
        if line.step is not None and line.loss is not None
    ]


def loss_chart(points: list[dict[str, float]]) -> dict[str, Any]:
    """A Chart.js line chart of the loss by step; the page's script adds points as they come."""
    return {
        "type": "line",
        "data": {
            "datasets": [
                {
                    "label": "Training loss",
                    "data": points,
                    "borderColor": "#2357c6",
                    "backgroundColor": "#2357c6",
                    "pointRadius": 0 if len(points) > 60 else 2,
                    "borderWidth": 2,
                    "tension": 0.2,
                }
            ]
        },
        "options": {
            "responsive": True,
            "maintainAspectRatio": False,
            "animation": False,
            "parsing": True,
            "scales": {
                "x": {"type": "linear", "title": {"display": True, "text": "Step"}},
                "y": {"title": {"display": True, "text": "Loss"}},
            },
            "plugins": {"legend": {"display": False}},
        },
    }


def _all_lines(ctx: Context, training_id: str) -> list[TrainingLogLine]:
    lines: list[TrainingLogLine] = []
    while len(lines) < PAGE_LINES:
        batch = jobs.read_training_log(ctx, training_id, lines[-1].id if lines else 0, LOG_BATCH)
        lines += batch
        if len(batch) < LOG_BATCH:
            break
    return lines


def _job_page(
    request: Request,
    ctx: Context,
    job: TrainingJobView,
    problems: Problems,
    status_code: int = 200,
) -> Response:
    lines = _all_lines(ctx, job.id)
    points = loss_points(lines)
    return render(
        request,
        "training/job.html",
        status_code,
        job=job,
        job_types=training_form.JOB_TYPES,
        labels=training_form.LABELS,
        progress=progress_of(job),
        final=job.status in TRAINING_FINAL,
        log=lines[-LOG_SHOWN:],
        after=lines[-1].id if lines else 0,
        chart=loss_chart(points),
        has_points=bool(points),
        problems=problems,
    )
