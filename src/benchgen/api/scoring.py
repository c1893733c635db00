"""`/api/v1/benchmarks/{id}/scoring`: how a qa or mcq benchmark's future runs are scored."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel

from benchgen.api.deps import ContextDep
from benchgen.api.errors import COMMON, responses
from benchgen.api.routing import OneThreadRoute
from benchgen.api.schemas import ScoringIn
from benchgen.core.errors import InvalidInput, invalid_all
from benchgen.services.benchmarks import scoring

router = APIRouter(
    prefix="/api/v1/benchmarks", tags=["benchmarks"], responses=COMMON, route_class=OneThreadRoute
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
    try:
        return scoring.set_scoring(ctx, benchmark_id, body.settings())
    except InvalidInput as problem:
        raise at_its_field(problem, "body") from None


def at_its_field(problem: InvalidInput, *settings: str) -> InvalidInput:
    """`problem` with the places the service gave under `scoring` moved under `settings`,
    where the request holds the settings (a PUT's body is the settings itself)."""
    moved = [
        {**error, "loc": [*settings, *error["loc"][1:]]}
        if error["loc"][:1] == ["scoring"]
        else error
        for error in problem.errors
    ]
    return invalid_all(moved) if moved else problem
