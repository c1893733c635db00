"""The dashboard: my benchmarks, recent runs, credit balance."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response

from benchgen.services.accounts import credits
from benchgen.services.benchmarks import lifecycle
from benchgen.services.runs import launch
from benchgen.web.session import WebContext, csrf_checked
from benchgen.web.templating import render

router = APIRouter(dependencies=[Depends(csrf_checked)], include_in_schema=False)


@router.get("/", name="dashboard")
def dashboard(request: Request, ctx: WebContext) -> Response:
    """Where a signed-in person lands."""
    mine = lifecycle.list_benchmarks(ctx, mine_only=True, limit=20)
    runs = launch.list_runs(ctx, limit=10)
    titles = {b.id: b.title for b in lifecycle.list_benchmarks(ctx, limit=100)}
    return render(
        request,
        "dashboard.html",
        benchmarks=mine,
        runs=runs,
        titles=titles,
        balance=credits.get_balance(ctx),
    )
