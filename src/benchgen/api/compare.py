"""`GET /api/v1/runs/compare`: two finished runs of one benchmark, paired question by question
(included before the runs router, so `/runs/{run_id}` does not take `compare` for an id)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from benchgen.api.deps import ContextDep
from benchgen.api.errors import COMMON
from benchgen.api.routing import OneThreadRoute
from benchgen.services.runs import compare
from benchgen.services.runs.compare import Comparison

router = APIRouter(
    prefix="/api/v1/runs", tags=["runs"], responses=COMMON, route_class=OneThreadRoute
)


@router.get("/compare", response_model=Comparison, openapi_extra={"x-scope": "read"})
def compare_runs(
    ctx: ContextDep,
    a: Annotated[str, Query(min_length=1, max_length=64, description="The reference run")],
    b: Annotated[str, Query(min_length=1, max_length=64, description="The run compared with a")],
) -> Comparison:
    """Run b against run a on the questions both answered: accuracies, the difference b − a with
    a paired bootstrap 95% interval, the exact McNemar test and the four counts (both right,
    both wrong, only a, only b), per-tag differences and the per-question table. Only for
    those who may see per-question results of both runs (the benchmark's team): 403 for
    others, whose runs show their own scores. 422 when the runs are on different benchmarks
    or versions, not finished (completed or cancelled), or on a custom benchmark."""
    return compare.compare_runs(ctx, a, b)
