"""`/api/v1/models`: the catalogue, and your own endpoints (keys go in, never come out)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from benchgen.api.deps import ContextDep
from benchgen.api.errors import COMMON, responses
from benchgen.api.paging import Cursor, Keyset, page
from benchgen.api.routing import OneThreadRoute
from benchgen.api.schemas import Page
from benchgen.services import models
from benchgen.services.models import CatalogueKey, ModelChange, ModelIn, ModelView

MODELS: Keyset[ModelView, CatalogueKey] = Keyset(
    "models", models.catalogue_key, list, lambda parts: _catalogue_key(*parts)
)
router = APIRouter(
    prefix="/api/v1/models", tags=["models"], responses=COMMON, route_class=OneThreadRoute
)


@router.get("", response_model=Page[ModelView], openapi_extra={"x-scope": "read"})
def list_models(
    ctx: ContextDep,
    benchmark_id: str | None = Query(
        None, max_length=40, description="Only models that can answer this benchmark's questions."
    ),
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    cursor: Cursor = None,
) -> dict[str, Any]:
    """Platform models for everyone, then yours, each group by name (each with the formats it
    can answer)."""
    return page(
        MODELS, lambda n, after: models.list_models(ctx, benchmark_id, n, after), cursor, limit
    )


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


def _catalogue_key(mine: Any, name: Any, model_id: Any) -> CatalogueKey:
    if type(mine) is not bool or not isinstance(name, str) or not isinstance(model_id, str):
        raise TypeError("whether the model is yours, its name and its id")
    return mine, name, model_id
