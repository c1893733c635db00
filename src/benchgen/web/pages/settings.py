"""Personal settings: my account (email, password), API tokens, and the credit ledger."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import Response

from benchgen.core.context import Context
from benchgen.core.errors import BenchGenError, Conflict, InvalidInput, RateLimited
from benchgen.core.permissions import Scope
from benchgen.services.accounts import credits, links, passwords, tokens, users
from benchgen.web.addresses import client_address
from benchgen.web.pages import shown_once
from benchgen.web.pages.accounts import (
    TOKENS_STAY,
    field_problems,
    open_browser_session,
    send_mail_after,
    signed_in_redirect,
)
from benchgen.web.session import WebContext, csrf_checked
from benchgen.web.templating import path_for, redirect, render

router = APIRouter(dependencies=[Depends(csrf_checked)], include_in_schema=False)
LEDGER_PAGE = 50
TOKEN_FIELDS = ("name", "scopes", "expires_days")
SCOPE_LABELS = {
    Scope.READ: "Read benchmarks, runs, models and credits",
    Scope.RUNS: "Launch, cancel and rescore runs; manage own models",
    Scope.CREATE: "Create benchmarks",
    Scope.EDIT: "Edit benchmarks and their questions",
    Scope.PUBLISH: "Publish benchmarks",
    Scope.TRAIN: "Launch training jobs",
}


@router.get("/settings/account", name="account")
def account_page(request: Request, ctx: WebContext) -> Response:
    """My name, email (verified or not) and the password form."""
    return _account(request, ctx, {})


def _account(
    request: Request,
    ctx: Context,
    problems: dict[str, str],
    status_code: int = 200,
    keep_writes: bool = False,
) -> Response:
    return render(
        request,
        "settings/account.html",
        status_code,
        keep_writes=keep_writes,
        user=users.get_me(ctx),
        problems=problems,
    )


@router.post("/settings/account/password", name="password_change")
def password_change(
    request: Request,
    ctx: WebContext,
    current_password: Annotated[str, Form(max_length=1024)] = "",
    new_password: Annotated[str, Form(max_length=1024)] = "",
    new_password_again: Annotated[str, Form(max_length=1024)] = "",
) -> Response:
    """Change my password; my other sessions and agent turns end, this one goes on under a new
    id."""
    if new_password != new_password_again:
        return _account(request, ctx, {"new_password_again": "does not match"}, 422)
    try:
        ended = passwords.change_password(
            ctx, current_password, new_password, client_address(request)
        )
    except InvalidInput as exc:
        # The service names the new password `password`.
        found = field_problems(exc, ("password",))
        problems = {("new_password" if k == "password" else k): v for k, v in found.items()}
        return _account(request, ctx, problems, 422)
    except RateLimited as exc:
        return _account(request, ctx, {"current_password": exc.message}, 429)
    if ended is None:
        # Returned, not raised: the page must commit so the failed guess is counted.
        wrong = {"current_password": "is not your current password"}
        return _account(request, ctx, wrong, 422, keep_writes=True)
    # A stolen cookie is why people change passwords: a copy of this browser's cookie (and the
    # CSRF token read with it) must end with the other sessions, so this one gets a new id.
    secret = open_browser_session(request, ctx, users.get_me(ctx))
    others = f" {ended} other session(s) were signed out." if ended else ""
    target = path_for(request, "account")
    flash = f"Your password is changed.{others}{TOKENS_STAY}"
    return signed_in_redirect(request, secret, target, flash)


@router.post("/settings/account/verify", name="verification_resend")
def verification_resend(request: Request, ctx: WebContext) -> Response:
    """Mail me a new link to verify my email."""
    try:
        address = links.send_verification(ctx)
    except (Conflict, RateLimited) as exc:
        return redirect(request, "account", flash=exc.message)
    response = redirect(request, "account", flash=f"We sent a new link to {address}.")
    return send_mail_after(request, response, address)


# The new secret travels from the POST to the page that shows it (shown_once): a reload never
# re-sends the form (which would make a second token) and never shows the secret again.
_NEW_TOKEN_COOKIE = "bg_new_token"  # noqa: S105 - a cookie name, not a secret
_TOKENS_PATH = "/settings/tokens"


@router.get(_TOKENS_PATH, name="tokens")
def token_list(request: Request, ctx: WebContext) -> Response:
    """My API tokens, a form to make one, and a token just made (shown this once)."""
    secret = _just_made(ctx, shown_once.handed(request, _NEW_TOKEN_COOKIE))
    response = _tokens(request, ctx, secret=secret)
    return shown_once.received(
        request, response, _NEW_TOKEN_COOKIE, _TOKENS_PATH, shown=bool(secret)
    )


def _just_made(ctx: Context, secret: str) -> str:
    """The secret, if it is a live token of the signed-in person; else nothing to show."""
    if not secret:
        return ""
    try:
        owner = tokens.authenticate_token(ctx, secret)
    except BenchGenError:
        return ""
    return secret if owner.user_id == ctx.principal.user_id else ""


def _tokens(
    request: Request,
    ctx: Context,
    *,
    secret: str = "",
    form: dict[str, object] | None = None,
    problems: dict[str, str] | None = None,
    status_code: int = 200,
) -> Response:
    now = ctx.now()
    mine = [(token, _token_status(token, now)) for token in tokens.list_tokens(ctx)]
    typed = form or {"name": "", "scopes": [Scope.READ.value], "expires_days": ""}
    return render(
        request,
        "settings/tokens.html",
        status_code,
        tokens=mine,
        secret=secret,
        form=typed,
        problems=problems or {},
        scopes=SCOPE_LABELS,
        default_days=ctx.settings.token_default_days,
        max_days=ctx.settings.token_max_days,
    )


def _token_status(token: tokens.TokenView, now: datetime) -> str:
    if token.revoked_at is not None:
        return "revoked"
    return "expired" if token.expires_at <= now else "active"


@router.post("/settings/tokens", name="token_create")
def token_create(
    request: Request,
    ctx: WebContext,
    name: Annotated[str, Form(max_length=400)] = "",
    scopes: Annotated[list[str] | None, Form(max_length=20)] = None,
    expires_days: Annotated[str, Form(max_length=20)] = "",
) -> Response:
    """Make a token; the page it leads to shows its secret once, never again."""
    chosen = [scope[:20] for scope in scopes or []]
    typed: dict[str, object] = {"name": name, "scopes": chosen, "expires_days": expires_days}
    days_text = expires_days.strip()
    if days_text and not (days_text.isascii() and days_text.isdigit() and len(days_text) < 7):
        problems = {"expires_days": "must be a whole number of days"}
        return _tokens(request, ctx, form=typed, problems=problems, status_code=422)
    try:
        made = tokens.create_token(ctx, name, chosen, int(days_text) if days_text else None)
    except InvalidInput as exc:
        problems = field_problems(exc, TOKEN_FIELDS)
        return _tokens(request, ctx, form=typed, problems=problems, status_code=422)
    response = redirect(request, "tokens")
    return shown_once.hand_over(request, response, _NEW_TOKEN_COOKIE, _TOKENS_PATH, made.secret)


@router.post("/settings/tokens/{token_id}/revoke", name="token_revoke")
def token_revoke(request: Request, ctx: WebContext, token_id: str) -> Response:
    """Revoke a token now: the next request that uses it is refused."""
    revoked = tokens.revoke_token(ctx, token_id)
    return redirect(request, "tokens", flash=f"Token “{revoked.name}” is revoked.")


@router.get("/settings/billing", name="billing")
def billing(request: Request, ctx: WebContext, before: str = "") -> Response:
    """My balance and ledger, newest first, a page at a time."""
    lines = credits.list_ledger(ctx, LEDGER_PAGE + 1, before[:40] or None)
    more = len(lines) > LEDGER_PAGE
    lines = lines[:LEDGER_PAGE]
    return render(
        request,
        "settings/billing.html",
        balance=credits.get_balance(ctx),
        ledger=lines,
        next_before=lines[-1].id if more else "",
        paged=bool(before),
    )
