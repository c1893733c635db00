"""`/api/v1/benchmarks/{id}/scoring`: how a qa or mcq benchmark's future runs are scored."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field, StrictBool

from benchgen.api.deps import ContextDep
from benchgen.api.errors import COMMON, responses
from benchgen.api.routing import OneThreadRoute
from benchgen.services.benchmarks import scoring

router = APIRouter(
    prefix="/api/v1/benchmarks", tags=["benchmarks"], responses=COMMON, route_class=OneThreadRoute
)


class ScoringIn(BaseModel):
    """A scoring method and its options (normalisation steps, tolerances…); missing options
    keep their defaults."""

    model_config = ConfigDict(extra="forbid")

    method: str | None = Field(None, max_length=40, examples=["includes"])
    # StrictBool: lax pydantic read "yes" or "on" as true; the scorer checks each option's type.
    options: dict[str, StrictBool | float] | None = Field(
        None, max_length=20, examples=[{"number_words": True, "articles": True}]
    )


class ScoringOut(BaseModel):
    """The settings in force, with every option of the method filled in."""

    method: str
    options: dict[str, Any]


@router.get(
    "/{benchmark_id}/scoring",
    response_model=ScoringOut,
    responses=responses(409),
    openapi_extra={"x-scope": "read"},
)
def get_scoring(ctx: ContextDep, benchmark_id: str) -> dict[str, Any]:
    """The scoring method and options future runs of this benchmark use."""
    return scoring.get_scoring(ctx, benchmark_id)


@router.put(
    "/{benchmark_id}/scoring",
    response_model=ScoringOut,
    responses=responses(409),
    openapi_extra={"x-scope": "edit"},
)
def set_scoring(ctx: ContextDep, benchmark_id: str, body: ScoringIn) -> dict[str, Any]:
    """Change how future runs are scored (`exact`, `includes`, `f1`, `numeric`, `regex` for qa;
    `choice` for mcq) and its normalisation steps; past runs keep theirs until rescored."""
    return scoring.set_scoring(ctx, benchmark_id, body.model_dump(exclude_none=True))
