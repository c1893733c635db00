"""File downloads under `/api/v1`: a benchmark's leaderboard as CSV or JSON."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query, Response

from benchgen.api.benchmarks import PhaseId
from benchgen.api.deps import ContextDep
from benchgen.api.errors import COMMON
from benchgen.api.files import attachment
from benchgen.api.routing import OneThreadRoute
from benchgen.services.runs import exports

router = APIRouter(
    prefix="/api/v1", tags=["benchmarks"], responses=COMMON, route_class=OneThreadRoute
)


@router.get(
    "/benchmarks/{benchmark_id}/leaderboard/export",
    openapi_extra={"x-scope": "read"},
    responses={200: {"content": {"text/csv": {}, "application/json": {}}}},
)
def export_leaderboard(
    ctx: ContextDep,
    benchmark_id: str,
    format: Annotated[Literal["csv", "json"], Query()] = "csv",
    phase_id: PhaseId = None,
) -> Response:
    """Download a phase's ranked leaderboard (the first phase by default) as CSV or JSON; text
    a spreadsheet would run as a formula starts with `'` in the CSV."""
    media, text = exports.export_leaderboard(ctx, benchmark_id, format, phase_id)
    return attachment(text, f"{benchmark_id}-leaderboard.{format}", media)
