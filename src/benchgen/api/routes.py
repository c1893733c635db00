"""API routes: who am I, and reading benchmarks (the rest of the API builds on these)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated, Any

from fastapi import APIRouter, Query

from benchgen.api.deps import ContextDep
from benchgen.api.schemas import BenchmarkOut, Me, Page
from benchgen.services import accounts, benchmarks, credits, tokens

router = APIRouter(prefix="/api/v1")


@router.get("/me", response_model=Me, tags=["account"])
def get_me(ctx: ContextDep) -> Me:
    """The token's user, credit balance, scopes and expiry."""
    user = accounts.get_me(ctx)
    token = tokens.describe_current(ctx)
    return Me(
        id=user.id,
        email=user.email,
        display_name=user.display_name,
        credits=credits.balance_of(ctx, user.id),
        scopes=sorted(ctx.principal.scopes),
        token_id=token.id if token else None,
        token_expires_at=token.expires_at if token else None,
    )


@router.get("/benchmarks", response_model=Page[BenchmarkOut], tags=["benchmarks"])
def list_benchmarks(
    ctx: ContextDep,
    mine: bool = False,
    search: Annotated[str, Query(max_length=200)] = "",
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    cursor: Annotated[str | None, Query(pattern=r"^\d{1,9}$")] = None,
) -> dict[str, Any]:
    """Benchmarks you can see: yours, shared with you, and published ones (unless `mine`)."""
    offset = int(cursor or 0)
    rows = benchmarks.list_benchmarks(ctx, mine, search, limit + 1, offset)
    more = len(rows) > limit
    return {
        "items": [asdict(row) for row in rows[:limit]],
        "next_cursor": str(offset + limit) if more else None,
    }


@router.get("/benchmarks/{benchmark_id}", response_model=BenchmarkOut, tags=["benchmarks"])
def get_benchmark(ctx: ContextDep, benchmark_id: str) -> dict[str, Any]:
    """One benchmark; 404 when it does not exist or you may not see it."""
    return asdict(benchmarks.get_benchmark(ctx, benchmark_id))
