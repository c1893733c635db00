"""Invites (admins only): mail someone a link to make their account."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import Response

from benchgen.core.context import Context
from benchgen.core.errors import Conflict, InvalidInput
from benchgen.services.accounts import signup
from benchgen.web.pages.accounts import field_problems, send_mail_after
from benchgen.web.session import WebContext, csrf_checked
from benchgen.web.templating import render

router = APIRouter(dependencies=[Depends(csrf_checked)], include_in_schema=False)


@router.get("/admin/invites", name="invites")
def invite_list(request: Request, ctx: WebContext) -> Response:
    """The invites sent, and a form to send one."""
    return _page(request, ctx, email="", problems={}, made=None)


@router.post("/admin/invites", name="invite_create")
def invite_create(
    request: Request, ctx: WebContext, email: Annotated[str, Form(max_length=320)] = ""
) -> Response:
    """Send an invite; its link is shown here once, for a deployment without SMTP."""
    try:
        made = signup.create_invite(ctx, email)
    except InvalidInput as exc:
        problems = field_problems(exc, ("email",))
        return _page(request, ctx, email=email, problems=problems, made=None, status_code=422)
    except Conflict as exc:
        return _page(
            request, ctx, email=email, problems={"": exc.message}, made=None, status_code=409
        )
    response = _page(request, ctx, email="", problems={}, made=made)
    response.headers["cache-control"] = "no-store"
    return send_mail_after(request, response, made.invite.email)


def _page(
    request: Request,
    ctx: Context,
    *,
    email: str,
    problems: dict[str, str],
    made: signup.NewInvite | None,
    status_code: int = 200,
) -> Response:
    invites = signup.list_invites(ctx)
    return render(
        request,
        "accounts/invites.html",
        status_code,
        invites=[(invite, invite.status_at(ctx.now())) for invite in invites],
        mode=signup.signup_mode(ctx),
        public_url=bool(ctx.settings.public_url),
        smtp=bool(ctx.settings.smtp_url),
        email=email,
        problems=problems,
        made=made,
    )
