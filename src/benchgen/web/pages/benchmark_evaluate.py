"""The Evaluate tab: pick a model, see what the run may cost, start it."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Form, Query, Request
from fastapi.responses import Response

from benchgen.core.context import Context
from benchgen.core.errors import (
    Conflict,
    InsufficientCredits,
    InvalidInput,
    NotFound,
    RateLimited,
)
from benchgen.services import models
from benchgen.services.accounts import credits, ratelimits
from benchgen.services.benchmarks import lifecycle, phases
from benchgen.services.runs import launch
from benchgen.services.runs.launch import Estimate
from benchgen.services.runtime import undo_on_error
from benchgen.web.pages.benchmark_frame import render_tab
from benchgen.web.session import WebContext, csrf_checked
from benchgen.web.templating import redirect

router = APIRouter(dependencies=[Depends(csrf_checked)], include_in_schema=False)
# Where a model comes from, in the order the picker shows them.
SOURCES = (("platform", "Platform models"), ("you", "My models"))
# What can stop a run that the person can fix here: another model, more credits, waiting.
_REFUSALS = (InvalidInput, Conflict, RateLimited, InsufficientCredits, NotFound)
IdQuery = Annotated[str, Query(max_length=64)]


@router.get("/benchmarks/{benchmark_id}/evaluate", name="benchmark_evaluate")
def evaluate(
    request: Request, ctx: WebContext, benchmark_id: str, model_id: IdQuery = ""
) -> Response:
    """The model picker; with a model chosen, the estimate and the start button."""
    return _page(request, ctx, benchmark_id, model_id)


@router.post("/benchmarks/{benchmark_id}/evaluate", name="benchmark_evaluate_start")
def evaluate_start(
    request: Request,
    ctx: WebContext,
    benchmark_id: str,
    model_id: Annotated[str, Form(max_length=64)],
    phase_id: Annotated[str, Form(max_length=64)] = "",
) -> Response:
    """Start the run (credits reserved, questions frozen) and go to its page."""
    try:
        with undo_on_error(ctx):
            run = launch.start_run(ctx, benchmark_id, model_id, phase_id or None)
    except _REFUSALS as exc:
        return _page(request, ctx, benchmark_id, model_id, exc.message, exc.http_status)
    return redirect(request, "run", flash="Run queued.", run_id=run.id)


def _page(
    request: Request,
    ctx: Context,
    benchmark_id: str,
    model_id: str,
    error: str = "",
    status_code: int = 200,
) -> Response:
    found = lifecycle.get_benchmark(ctx, benchmark_id)
    choices = models.list_models(ctx, benchmark_id)
    groups = [
        (label, [model for model in choices if model.owner == source]) for source, label in SOURCES
    ]
    estimate: Estimate | None = None
    if model_id and not error:
        try:
            estimate = launch.estimate_run(ctx, benchmark_id, model_id)
        except (NotFound, InvalidInput) as exc:
            error, status_code = exc.message, exc.http_status
    return render_tab(
        request,
        "benchmarks/evaluate.html",
        found,
        "benchmark_evaluate",
        status_code,
        groups=[(label, items) for label, items in groups if items],
        model_id=model_id,
        estimate=estimate,
        error=error,
        phases=phases.list_phases(ctx, benchmark_id),
        quota=ratelimits.run_quota(ctx, benchmark_id),
        balance=credits.get_balance(ctx),
    )
