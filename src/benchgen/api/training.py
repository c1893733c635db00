"""`/api/v1/training-jobs` and `/api/v1/compute`: plan, launch, follow and cancel training."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from benchgen.api.deps import ContextDep
from benchgen.api.errors import COMMON, responses
from benchgen.api.models import MODELS
from benchgen.api.paging import Cursor, Keyset, newest, page
from benchgen.api.routing import OneThreadRoute
from benchgen.api.schemas import Page
from benchgen.services.keysets import Newest
from benchgen.services.models import CatalogueKey
from benchgen.services.training import bases, compute, jobs, plans
from benchgen.services.training.bases import BaseChoice, PlacedChoice
from benchgen.services.training.compute import PoolView
from benchgen.services.training.jobs import TrainingJobView, TrainingLogLine
from benchgen.services.training.plans import TrainingIn, TrainingPlan

router = APIRouter(
    prefix="/api/v1", tags=["training"], responses=COMMON, route_class=OneThreadRoute
)
JOBS: Keyset[TrainingJobView, Newest] = newest(
    "training-jobs", lambda row: (row.created_at, row.id)
)
POOLS: Keyset[PoolView, str] = Keyset(
    "compute", lambda row: row.pool, lambda pool: [pool], lambda parts: _pool_name(*parts)
)
# A cursor carries a base's place in the model catalogue, written and read as the catalogue's.
BASES: Keyset[PlacedChoice, CatalogueKey] = Keyset(
    "training-bases", lambda placed: placed[1], MODELS.dump, MODELS.load
)
MAX_LOG_ID = 2**31 - 1


@router.get("/compute", response_model=Page[PoolView], openapi_extra={"x-scope": "read"})
def compute_inventory(
    ctx: ContextDep,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    cursor: Cursor = None,
) -> dict[str, Any]:
    """The compute pools offered for training, the CPU first and then the GPU types by name,
    and what is free right now."""
    return page(POOLS, lambda n, after: compute.compute_inventory(ctx, n, after), cursor, limit)


@router.get("/training-bases", response_model=Page[BaseChoice], openapi_extra={"x-scope": "read"})
def training_bases(
    ctx: ContextDep,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    cursor: Cursor = None,
) -> dict[str, Any]:
    """Every model you may use, in the model catalogue's order (the platform's first, then
    yours, each by name), with whether it can be trained here and, if not, why."""
    found = page(BASES, lambda n, after: bases.page_training_bases(ctx, n, after), cursor, limit)
    return {**found, "items": [choice for choice, _ in found["items"]]}


@router.post(
    "/training-jobs/estimate", response_model=TrainingPlan, openapi_extra={"x-scope": "train"}
)
def estimate_training(ctx: ContextDep, body: TrainingIn) -> TrainingPlan:
    """The full plan of a training job without launching it: hyperparameters with defaults,
    steps, memory, compute availability, duration and credits."""
    return plans.plan_training(ctx, body)


@router.post(
    "/training-jobs",
    status_code=202,
    response_model=TrainingJobView,
    responses=responses(402),
    openapi_extra={"x-scope": "train"},
)
def start_training(ctx: ContextDep, body: TrainingIn) -> TrainingJobView:
    """Queue a training job: the plan is checked again and its credits reserved (402 when the
    balance cannot cover it). A job whose compute is busy waits in the queue and says so."""
    return jobs.start_training(ctx, body)


@router.get(
    "/training-jobs", response_model=Page[TrainingJobView], openapi_extra={"x-scope": "read"}
)
def list_training_jobs(
    ctx: ContextDep,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    cursor: Cursor = None,
) -> dict[str, Any]:
    """Your training jobs, newest first."""
    return page(JOBS, lambda n, after: jobs.list_training_jobs(ctx, n, after), cursor, limit)


@router.get(
    "/training-jobs/{training_id}",
    response_model=TrainingJobView,
    openapi_extra={"x-scope": "read"},
)
def get_training_job(ctx: ContextDep, training_id: str) -> TrainingJobView:
    """Status, steps, the last loss, credits and the Trained model once it completes."""
    return jobs.get_training_job(ctx, training_id)


@router.get(
    "/training-jobs/{training_id}/log",
    response_model=Page[TrainingLogLine],
    openapi_extra={"x-scope": "read"},
)
def read_training_log(
    ctx: ContextDep,
    training_id: str,
    after: Annotated[int, Query(ge=0, le=MAX_LOG_ID)] = 0,
    limit: Annotated[int, Query(ge=1, le=5000)] = 1000,
) -> dict[str, Any]:
    """Log lines after the id `after`, each step's with loss, learning rate and throughput;
    poll with the last id to follow a live job."""
    lines = jobs.read_training_log(ctx, training_id, after, limit)
    return {"items": lines, "next_cursor": str(lines[-1].id) if len(lines) == limit else None}


@router.post(
    "/training-jobs/{training_id}/cancel",
    response_model=TrainingJobView,
    responses=responses(409),
    openapi_extra={"x-scope": "train"},
)
def cancel_training_job(ctx: ContextDep, training_id: str) -> TrainingJobView:
    """Cancel a queued job (nothing charged) or stop a running one between steps (charged for
    the steps that ran)."""
    return jobs.cancel_training_job(ctx, training_id)


def _pool_name(pool: Any) -> str:
    if not isinstance(pool, str):
        raise TypeError("a pool's name")
    return pool
