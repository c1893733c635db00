"""A benchmark's tabs: overview (and joining), phases, leaderboard, runs."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Form, Query, Request
from fastapi.responses import Response

from benchgen.core.context import Context
from benchgen.core.errors import Conflict, InvalidInput, NotFound, PermissionDenied
from benchgen.services.accounts import ratelimits
from benchgen.services.benchmarks import bundles, lifecycle, members, phases
from benchgen.services.benchmarks.lifecycle import BenchmarkView
from benchgen.services.runs import launch, leaderboards
from benchgen.services.runs.leaderboards import Leaderboard
from benchgen.services.runtime import undo_on_error
from benchgen.web.charts import chart_label
from benchgen.web.pages.benchmark_frame import back_to, render_tab
from benchgen.web.session import WebContext, csrf_checked
from benchgen.web.templating import render

router = APIRouter(dependencies=[Depends(csrf_checked)], include_in_schema=False)
RUNS_PAGE = 25
CHART_TOP = 10
_JOINERS = frozenset({"public", "invitee"})
_MEMBERS = frozenset({"owner", "collaborator", "participant"})
PhaseQuery = Annotated[str | None, Query(max_length=64)]


@router.get("/benchmarks/{benchmark_id}", name="benchmark")
def overview(request: Request, ctx: WebContext, benchmark_id: str) -> Response:
    """A benchmark's overview; someone the whitelist admits sees the invitation to join."""
    return _overview(request, ctx, benchmark_id)


def _overview(
    request: Request, ctx: Context, benchmark_id: str, status_code: int = 200, join_error: str = ""
) -> Response:
    try:
        found = lifecycle.get_benchmark(ctx, benchmark_id)
    except (NotFound, PermissionDenied) as refused:
        # Someone the whitelist admits holds no reading role yet: they see the invitation.
        return _invitation(request, ctx, benchmark_id, refused, status_code, join_error)
    removed = members.removal_note(ctx, benchmark_id)
    return render_tab(
        request,
        "benchmarks/overview.html",
        found,
        "benchmark",
        status_code,
        quota=ratelimits.run_quota(ctx, benchmark_id),
        can_join=_can_join(found) and removed is None,
        removed=removed,
        terms=members.TERMS,
        join_error=join_error,
        bundle=bundles.get_bundle(ctx, benchmark_id) if found.format == "custom" else None,
        board=_board_of(ctx, benchmark_id) if found.format == "custom" else None,
    )


def _board_of(ctx: Context, benchmark_id: str) -> Leaderboard | None:
    """The first phase's leaderboard, for its columns (none before any phase exists)."""
    try:
        return leaderboards.get_leaderboard(ctx, benchmark_id)
    except NotFound:
        return None


def _invitation(
    request: Request,
    ctx: Context,
    benchmark_id: str,
    refused: NotFound | PermissionDenied,
    status_code: int,
    join_error: str,
) -> Response:
    try:
        invitation = lifecycle.get_invitation(ctx, benchmark_id)
    except (NotFound, PermissionDenied):
        # Not invited either: the answer reading it gave (a stranger's is "no such benchmark").
        raise refused from None
    return render(
        request,
        "benchmarks/invitation.html",
        status_code,
        invitation=invitation,
        terms=members.TERMS,
        join_error=join_error,
    )


def _can_join(benchmark: BenchmarkView) -> bool:
    roles = set(benchmark.roles)
    return bool(roles & _JOINERS) and not roles & _MEMBERS


@router.post("/benchmarks/{benchmark_id}/join", name="benchmark_join")
def join(
    request: Request,
    ctx: WebContext,
    benchmark_id: str,
    accept_terms: Annotated[str, Form(max_length=10)] = "",
) -> Response:
    """Join as a participant, once the terms are accepted."""
    try:
        with undo_on_error(ctx):
            members.join_benchmark(ctx, benchmark_id, accept_terms == "yes")
    except InvalidInput:
        message = "Tick the box to accept the terms before joining."
        return _overview(request, ctx, benchmark_id, 422, message)
    except Conflict as exc:
        return back_to(request, "benchmark", exc.message, benchmark_id=benchmark_id)
    return back_to(request, "benchmark", "You joined as a participant.", benchmark_id=benchmark_id)


@router.get("/benchmarks/{benchmark_id}/phases", name="benchmark_phases")
def phase_list(request: Request, ctx: WebContext, benchmark_id: str) -> Response:
    """The phases and the tasks active in each (read-only)."""
    found = lifecycle.get_benchmark(ctx, benchmark_id)
    tasks = {task.id: task for task in phases.list_tasks(ctx, benchmark_id)}
    return render_tab(
        request,
        "benchmarks/phases.html",
        found,
        "benchmark_phases",
        phases=phases.list_phases(ctx, benchmark_id),
        tasks=tasks,
    )


@router.get("/benchmarks/{benchmark_id}/leaderboard", name="benchmark_leaderboard")
def leaderboard(
    request: Request, ctx: WebContext, benchmark_id: str, phase: PhaseQuery = None
) -> Response:
    """A phase's ranked runs, as a table and as a bar chart of the top ones."""
    found = lifecycle.get_benchmark(ctx, benchmark_id)
    board = leaderboards.get_leaderboard(ctx, benchmark_id, phase or None)
    return render_tab(
        request,
        "benchmarks/leaderboard.html",
        found,
        "benchmark_leaderboard",
        board=board,
        phases=phases.list_phases(ctx, benchmark_id),
        chart=chart_config(board, percent=found.format != "custom"),
    )


def chart_config(board: Leaderboard, percent: bool = True) -> dict[str, Any] | None:
    """A Chart.js bar chart of the best scored runs on the primary column: in percent for
    accuracy, in the column's own units for a bundle's columns (they are not fractions)."""
    if not board.columns:
        return None
    primary = board.columns[0]
    scored = [row for row in board.rows if isinstance(row.scores.get(primary), int | float)]
    top = scored[:CHART_TOP]
    if not top:
        return None
    title = board.titles.get(primary, primary)
    scale, digits = (100, 2) if percent else (1, 6)
    return {
        "type": "bar",
        "data": {
            "labels": [chart_label(f"#{row.rank} {row.model_name}") for row in top],
            "datasets": [
                {
                    "label": f"{title} (%)" if percent else title,
                    "data": [round(float(row.scores[primary]) * scale, digits) for row in top],
                    "backgroundColor": "#2357c6",
                }
            ],
        },
        "options": {
            "indexAxis": "y",
            "responsive": True,
            "maintainAspectRatio": False,
            "animation": False,
            "scales": {"x": {"min": 0, "max": 100}} if percent else {},
            "plugins": {"legend": {"display": False}},
        },
    }


@router.get("/benchmarks/{benchmark_id}/runs", name="benchmark_runs")
def run_list(
    request: Request,
    ctx: WebContext,
    benchmark_id: str,
    page: Annotated[int, Query(ge=1, le=1000)] = 1,
) -> Response:
    """Runs on this benchmark that I may see: mine, and all of them for its team."""
    found = lifecycle.get_benchmark(ctx, benchmark_id)
    runs = launch.list_runs(ctx, benchmark_id, RUNS_PAGE + 1, (page - 1) * RUNS_PAGE)
    return render_tab(
        request,
        "benchmarks/runs.html",
        found,
        "benchmark_runs",
        runs=runs[:RUNS_PAGE],
        more=len(runs) > RUNS_PAGE,
        page=page,
    )
