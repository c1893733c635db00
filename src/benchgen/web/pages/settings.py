"""Personal settings: API tokens and the credit ledger."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response

from benchgen.services.accounts import credits, tokens
from benchgen.web.session import WebContext, csrf_checked
from benchgen.web.templating import render

router = APIRouter(dependencies=[Depends(csrf_checked)], include_in_schema=False)


@router.get("/settings/tokens", name="tokens")
def token_list(request: Request, ctx: WebContext) -> Response:
    """My API tokens."""
    return render(request, "settings/tokens.html", tokens=tokens.list_tokens(ctx))


@router.get("/settings/billing", name="billing")
def billing(request: Request, ctx: WebContext) -> Response:
    """My balance and ledger."""
    return render(
        request,
        "settings/billing.html",
        balance=credits.get_balance(ctx),
        ledger=credits.list_ledger(ctx),
    )
