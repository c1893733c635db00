"""`/api/v1/models`: the catalogue, and your own endpoints (keys go in, never come out)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query

from benchgen.api.deps import ContextDep
from benchgen.api.errors import COMMON, responses
from benchgen.api.routing import OneThreadRoute
from benchgen.api.schemas import Page
from benchgen.services import models
from benchgen.services.models import ModelChange, ModelIn, ModelView

router = APIRouter(
    prefix="/api/v1/models", tags=["models"], responses=COMMON, route_class=OneThreadRoute
)


@router.get("", response_model=Page[ModelView], openapi_extra={"x-scope": "read"})
def list_models(
    ctx: ContextDep,
    benchmark_id: str | None = Query(
        None, max_length=40, description="Only models that can answer this benchmark's questions."
    ),
) -> dict[str, Any]:
    """Platform models for everyone, then yours (each with the formats it can answer)."""
    return {"items": models.list_models(ctx, benchmark_id), "next_cursor": None}


@router.get("/{model_id}", response_model=ModelView, openapi_extra={"x-scope": "read"})
def get_model(ctx: ContextDep, model_id: str) -> ModelView:
    """One model you may use."""
    return models.get_model(ctx, model_id)


@router.post("", status_code=201, response_model=ModelView, openapi_extra={"x-scope": "runs"})
def create_model(ctx: ContextDep, body: ModelIn) -> ModelView:
    """Register your own OpenAI-compatible or Anthropic endpoint (no private addresses unless
    the operator allowed the host; redirects are never followed)."""
    return models.create_model(ctx, body)


@router.patch(
    "/{model_id}",
    response_model=ModelView,
    responses=responses(409),
    openapi_extra={"x-scope": "runs"},
)
def update_model(ctx: ContextDep, model_id: str, body: ModelChange) -> ModelView:
    """Rename one of your models, rotate its key or change its parameters (409 when the
    request gives none of them)."""
    return models.update_model(ctx, model_id, body)
