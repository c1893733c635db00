"""Run pages: status, live log, per-question breakdown, leaderboard adds and score edits."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response

from benchgen.services.runs import launch
from benchgen.web.session import WebContext, csrf_checked
from benchgen.web.templating import render

router = APIRouter(dependencies=[Depends(csrf_checked)], include_in_schema=False)


@router.get("/runs/{run_id}", name="run")
def run_page(request: Request, ctx: WebContext, run_id: str) -> Response:
    """One run."""
    return render(request, "runs/run.html", run=launch.get_run(ctx, run_id))
