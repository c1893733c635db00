"""Run pages: status, live log, per-question breakdown, downloads, leaderboard, rescoring,
judging again and score edits."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Form, Query, Request
from fastapi.responses import Response

from benchgen.core.context import Context
from benchgen.core.errors import InvalidInput, NotFound, PermissionDenied, invalid
from benchgen.core.statuses import RUN_FINAL
from benchgen.core.text import plural
from benchgen.services.benchmarks import lifecycle
from benchgen.services.runs import (
    breakdown,
    bundle_execution,
    launch,
    leaderboards,
    rejudging,
    rescoring,
    results,
    retries,
    run_log,
    settings,
)
from benchgen.services.runs.breakdown import TagAccuracy
from benchgen.services.runs.controls import run_controls
from benchgen.services.runs.rescoring import Rescore
from benchgen.web.files import streamed_attachment
from benchgen.web.pages import run_events
from benchgen.web.session import WebContext, csrf_checked, runtime_of
from benchgen.web.templating import redirect, render

router = APIRouter(dependencies=[Depends(csrf_checked)], include_in_schema=False)
router.include_router(run_events.router)
PAGE_SIZE = 50
SHOWN_LOG_LINES = 1000
SHOW_LABELS = {"all": "All questions", "wrong": "Wrong", "no_answer": "No answer"}


@dataclass(frozen=True)
class Filters:
    """Which of the run's questions the breakdown shows."""

    show: str = "all"
    tag: str = ""
    page: int = 1


@dataclass(frozen=True)
class ScoreForm:
    """The score-correction form as typed, with any problems by field."""

    accuracy: str = ""  # the value typed (a percentage, or a bundle column's own units)
    reason: str = ""
    problems: dict[str, str] = field(default_factory=dict)
    column: str = ""  # a custom benchmark's column; empty for accuracy


@router.get("/runs/{run_id}", name="run")
def run_page(
    request: Request,
    ctx: WebContext,
    run_id: str,
    show: Annotated[str, Query(max_length=20)] = "all",
    tag: Annotated[str, Query(max_length=100)] = "",
    page: Annotated[int, Query(ge=1, le=10_000)] = 1,
) -> Response:
    """One run: status, cost, scores, live log, breakdown (for the benchmark's team), actions."""
    return _run_page(request, ctx, run_id, Filters(show, tag, page))


def _run_page(
    request: Request,
    ctx: WebContext,
    run_id: str,
    filters: Filters,
    status_code: int = 200,
    score_form: ScoreForm | None = None,
    rescored: Rescore | None = None,
) -> Response:
    run = launch.get_run(ctx, run_id)
    final = run.status in RUN_FINAL
    controls = run_controls(ctx, run_id)
    values: dict[str, Any] = {
        "run": run,
        "controls": controls,
        "final": final,
        "columns": _columns(ctx, run, controls.benchmark_title is not None),
        "program_output": _program_output(ctx, run_id),
        # A finished run's log is shown at once; a live one arrives over the event stream.
        "log": run_log.read_log(ctx, run_id, limit=SHOWN_LOG_LINES) if final else [],
        "progress": run_events.progress_of(run),
        "filters": filters,
        "show_labels": SHOW_LABELS,
        "score_form": score_form or ScoreForm(),
        "rescored": rescored,  # a dry run's result, shown with its Apply button
        "settings_text": settings.describe(run.settings, whole=True),
        "can_retry": final and run.error_count > 0 and run.launched_by == ctx.principal.user_id,
    }
    offset = (filters.page - 1) * PAGE_SIZE
    if run.detail_visible:
        found = breakdown.list_breakdown(ctx, run_id, filters.show, filters.tag, PAGE_SIZE, offset)
        stats = breakdown.tag_accuracy(ctx, run_id)
        values.update(
            rows=found.rows,
            tags=found.tags,
            total=found.total,
            has_next=offset + PAGE_SIZE < found.total,
            tag_stats=stats,
            chart=tag_chart(stats),
            answers=[],
        )
    else:
        answers = results.list_results(ctx, run_id, PAGE_SIZE + 1, offset)
        values.update(
            rows=[],
            tags=[],
            total=0,
            has_next=len(answers) > PAGE_SIZE,
            tag_stats=[],
            chart=None,
            answers=answers[:PAGE_SIZE],
        )
    return render(request, "runs/run.html", status_code=status_code, **values)


@dataclass(frozen=True)
class ScoreColumns:
    """How the run page shows scores: the benchmark's column titles and directions, in
    leaderboard order; percent only for accuracy on qa and mcq (bundle scores are raw)."""

    order: list[str]
    titles: dict[str, str]
    sorting: dict[str, str]
    percent: bool


def _columns(ctx: Context, run: launch.RunView, visible: bool) -> ScoreColumns:
    # A custom run is a submission, or was scored against the bundle's leaderboard.
    custom = run.model_id is None or "leaderboard" in run.scoring
    if not visible:
        return ScoreColumns(list(run.scores), {}, {}, not custom)
    custom = lifecycle.get_benchmark(ctx, run.benchmark_id).format == "custom"
    shown = leaderboards.run_columns(ctx, run.id)
    order = [c.key for c in shown]
    order += [key for key in run.scores if key not in order]
    # Only the organisers are shown a hidden column: they learn that participants are not.
    titles = {
        c.key: f"{c.title} (hidden from participants)" if c.hidden else c.title for c in shown
    }
    return ScoreColumns(order, titles, {c.key: c.sorting for c in shown}, not custom)


def _program_output(ctx: Context, run_id: str) -> dict[str, str] | None:
    """The bundle programs' output, for the benchmark's team only (a scoring program may print
    reference data); None hides the section from everyone else."""
    try:
        return bundle_execution.program_output(ctx, run_id)
    except (NotFound, PermissionDenied):
        return None


def tag_chart(stats: list[TagAccuracy]) -> dict[str, Any] | None:
    """A Chart.js bar chart of accuracy by tag, each beside its 95% interval as a floating bar
    (none without tags)."""
    if not stats:
        return None
    return {
        "type": "bar",
        "data": {
            "labels": [stat.tag for stat in stats],
            "datasets": [
                {
                    "label": "Accuracy (%)",
                    "data": [_percent(stat.accuracy) for stat in stats],
                    "backgroundColor": "#2f5fb3",
                },
                {
                    "label": "95% interval (%)",
                    "data": [[_percent(stat.ci_low), _percent(stat.ci_high)] for stat in stats],
                    "backgroundColor": "rgba(47, 95, 179, 0.3)",
                },
            ],
        },
        "options": {
            "maintainAspectRatio": False,
            "scales": {"y": {"min": 0, "max": 100, "title": {"display": True, "text": "%"}}},
        },
    }


def _percent(value: float) -> float:
    return round(value * 100, 1)


@router.get("/runs/{run_id}/download/{fmt}", name="run_download")
def run_download(request: Request, ctx: WebContext, run_id: str, fmt: str) -> Response:
    """The results as JSONL or CSV: what the viewer may see, as the API's export gives it."""
    media = results.export_media(ctx, run_id, fmt)  # refused here, before the first byte
    chunks = results.export_stream(runtime_of(request), ctx.principal, run_id, fmt)
    return streamed_attachment(chunks, f"{run_id}.{fmt}", media)


@router.post("/runs/{run_id}/leaderboard", name="run_leaderboard_add")
def run_leaderboard_add(request: Request, ctx: WebContext, run_id: str) -> Response:
    """Put the finished run on its phase's leaderboard (the benchmark's team)."""
    leaderboards.add_to_leaderboard(ctx, run_id)
    return redirect(request, "run", flash="The run is on the leaderboard.", run_id=run_id)


@router.post("/runs/{run_id}/leaderboard/remove", name="run_leaderboard_remove")
def run_leaderboard_remove(request: Request, ctx: WebContext, run_id: str) -> Response:
    """Take the run off its leaderboard."""
    leaderboards.remove_from_leaderboard(ctx, run_id)
    return redirect(request, "run", flash="The run is off the leaderboard.", run_id=run_id)


@router.post("/runs/{run_id}/retry", name="run_retry")
def run_retry(request: Request, ctx: WebContext, run_id: str) -> Response:
    """Ask the run's errored questions again as a new linked run, and go to it."""
    retried = retries.retry_errored(ctx, run_id)
    return redirect(request, "run", flash="Errored questions queued again.", run_id=retried.id)


@router.post("/runs/{run_id}/rejudge", name="run_rejudge")
def run_rejudge(request: Request, ctx: WebContext, run_id: str) -> Response:
    """Hand the answers whose AI judging failed back to the judge (no model asked again)."""
    handed = rejudging.rejudge_run(ctx, run_id)
    note = (
        f"{plural(handed.answers, 'answer')} went back to the AI judge; the run's scores change "
        "once it has judged them."
    )
    return redirect(request, "run", flash=note, run_id=run_id)


@router.post("/runs/{run_id}/cancel", name="run_cancel")
def run_cancel(request: Request, ctx: WebContext, run_id: str) -> Response:
    """Cancel a queued run or ask a running one to stop."""
    cancelled = launch.cancel_run(ctx, run_id)
    note = "Cancelled." if cancelled.status in RUN_FINAL else "Asked the run to stop."
    return redirect(request, "run", flash=note, run_id=run_id)


@router.post("/runs/{run_id}/rescore", name="run_rescore")
def run_rescore(request: Request, ctx: WebContext, run_id: str) -> Response:
    """A dry run with the benchmark's scoring for future runs: the run's page with what would
    change and an Apply button for exactly those settings."""
    dry = rescoring.rescore_run(ctx, run_id, rescoring.offered_scoring(ctx, run_id))
    return _run_page(request, ctx, run_id, Filters(), rescored=dry)


@router.post("/runs/{run_id}/rescore/apply", name="run_rescore_apply")
def run_rescore_apply(
    request: Request,
    ctx: WebContext,
    run_id: str,
    scoring: Annotated[str, Form(max_length=10_000)] = "",
) -> Response:
    """Apply the settings a dry run showed (rescoring checks them and the person again)."""
    applied = rescoring.rescore_run(ctx, run_id, _settings_of(scoring), apply=True)
    note = (
        f"Rescored: {applied.changed_count} verdict(s) changed; accuracy "
        f"{_accuracy_text(applied.before)} → {_accuracy_text(applied.after)}."
    )
    return redirect(request, "run", flash=note, run_id=run_id)


def _settings_of(text: str) -> dict[str, Any]:
    """The dry run's settings from the Apply form's hidden field (JSON of one object)."""
    try:
        settings = json.loads(text)
    except ValueError:
        settings = None
    if not isinstance(settings, dict):
        raise invalid(["scoring"], "the scoring settings were lost; run the dry run again")
    return settings


def _accuracy_text(summary: dict[str, Any]) -> str:
    value = summary.get("accuracy")
    return f"{value * 100:.1f}%" if isinstance(value, int | float) else "none"


@router.post("/runs/{run_id}/score", name="run_edit_score")
def run_edit_score(
    request: Request,
    ctx: WebContext,
    run_id: str,
    accuracy: Annotated[str, Form(max_length=50)] = "",
    reason: Annotated[str, Form(max_length=2000)] = "",
    column: Annotated[str, Form(max_length=200)] = "",
    value: Annotated[str, Form(max_length=50)] = "",
) -> Response:
    """Correct the run's score by hand (the benchmark's owner); the reason is required. A
    custom benchmark's form names a column and a value in its own units."""
    typed = value if column else accuracy
    try:
        number = float(typed.strip()) if column else float(typed.strip().rstrip("%")) / 100
    except ValueError:
        number = float("nan")  # refused below, with the other problems
    try:
        leaderboards.edit_run_score(ctx, run_id, {column or "accuracy": number}, reason)
    except InvalidInput as exc:
        problems = {_field_of(error): error.get("msg", "") for error in exc.errors}
        if "accuracy" in problems:
            problems["accuracy"] = "enter a percentage from 0 to 100"
        if column and column in problems:
            problems["value"] = problems.pop(column)
        form = ScoreForm(typed, reason, problems, column)
        return _run_page(request, ctx, run_id, Filters(), 422, form)
    return redirect(request, "run", flash="Score corrected.", run_id=run_id)


def _field_of(error: dict[str, Any]) -> str:
    names = [part for part in error.get("loc", []) if isinstance(part, str)]
    return names[-1] if names else ""
