"""`/api/v1/me` and `/api/v1/credits`."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from benchgen.api.deps import ContextDep
from benchgen.api.errors import COMMON
from benchgen.api.paging import Cursor
from benchgen.api.routing import OneThreadRoute
from benchgen.api.schemas import Me, Page
from benchgen.core.errors import InvalidInput, invalid
from benchgen.services.accounts import credits, tokens, users
from benchgen.services.accounts.credits import LedgerLine

router = APIRouter(prefix="/api/v1", tags=["account"], responses=COMMON, route_class=OneThreadRoute)


@router.get("/me", response_model=Me, openapi_extra={"x-scope": None})
def get_me(ctx: ContextDep) -> Me:
    """The token's user, whether they administer the server, credit balance, scopes and expiry
    (any valid token)."""
    user = users.get_me(ctx)
    token = tokens.describe_current(ctx)
    return Me(
        id=user.id,
        email=user.email,
        display_name=user.display_name,
        is_admin=user.is_admin,
        credits=credits.my_balance(ctx),
        scopes=sorted(ctx.principal.scopes),
        token_id=token.id if token else None,
        token_expires_at=token.expires_at if token else None,
    )


@router.get("/credits", response_model=Page[LedgerLine], openapi_extra={"x-scope": "read"})
def list_credits(
    ctx: ContextDep,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    cursor: Cursor = None,
) -> dict[str, Any]:
    """Your credit ledger, newest first: grants, reservations, settlements, refunds."""
    try:
        lines = credits.list_ledger(ctx, limit + 1, cursor)
    except InvalidInput as exc:
        # The ledger names its cursor `before`; the caller sent `cursor` in the query.
        if [error["loc"] for error in exc.errors] != [["before"]]:
            raise
        raise invalid(["query", "cursor"], "not a cursor from a previous page") from None
    more = len(lines) > limit
    return {"items": lines[:limit], "next_cursor": lines[limit - 1].id if more else None}
