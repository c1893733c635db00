"""Invites (admins only): mail someone a link to make their account."""

from __future__ import annotations

from typing import Annotated
from urllib.parse import parse_qs, urlsplit

from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import Response

from benchgen.core.context import Context
from benchgen.core.errors import Conflict, InvalidInput
from benchgen.services.accounts import signup
from benchgen.web.pages import shown_once
from benchgen.web.pages.accounts import field_problems, send_mail_after
from benchgen.web.session import WebContext, csrf_checked
from benchgen.web.templating import redirect, render

router = APIRouter(dependencies=[Depends(csrf_checked)], include_in_schema=False)
# A new invite's secret travels from the POST to the page that shows its link (shown_once): a
# reload never re-sends the form (refused: the address is invited already) nor shows it again.
_NEW_INVITE_COOKIE = "bg_new_invite"
_INVITES_PATH = "/admin/invites"


@router.get(_INVITES_PATH, name="invites")
def invite_list(request: Request, ctx: WebContext) -> Response:
    """The invites sent, a form to send one, and the link of one just sent (shown this once)."""
    made = _just_made(ctx, shown_once.handed(request, _NEW_INVITE_COOKIE))
    response = _page(request, ctx, email="", problems={}, made=made)
    return shown_once.received(
        request, response, _NEW_INVITE_COOKIE, _INVITES_PATH, shown=made is not None
    )


def _just_made(ctx: Context, secret: str) -> tuple[str, str] | None:
    """The address and link of the invite behind `secret` while it is open; else nothing to
    show. (Whoever holds an invite's secret may learn its address: the sign-up page shows it.)"""
    invited = signup.invite_email(ctx, secret) if secret else None
    if invited is None:
        return None
    return invited, signup.invite_link(ctx, secret)


@router.post(_INVITES_PATH, name="invite_create")
def invite_create(
    request: Request, ctx: WebContext, email: Annotated[str, Form(max_length=320)] = ""
) -> Response:
    """Send an invite; the page this leads to shows its link once, for a deployment without
    SMTP."""
    try:
        made = signup.create_invite(ctx, email)
    except InvalidInput as exc:
        problems = field_problems(exc, ("email",))
        return _page(request, ctx, email=email, problems=problems, status_code=422)
    except Conflict as exc:
        return _page(request, ctx, email=email, problems={"": exc.message}, status_code=409)
    secret = parse_qs(urlsplit(made.link).query)["invite"][0]
    response = redirect(request, "invites", flash=f"Invite sent to {made.invite.email}.")
    shown_once.hand_over(request, response, _NEW_INVITE_COOKIE, _INVITES_PATH, secret)
    return send_mail_after(request, response, made.invite.email)


def _page(
    request: Request,
    ctx: Context,
    *,
    email: str,
    problems: dict[str, str],
    made: tuple[str, str] | None = None,
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
