"""An invitation to collaborate, as its mailed link opens it: sign in, see it, accept it."""

from __future__ import annotations

from urllib.parse import quote

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response

from benchgen.core.errors import Conflict, NotFound, PermissionDenied
from benchgen.services.accounts import signup
from benchgen.services.benchmarks import invitations
from benchgen.services.runtime import transaction, undo_on_error
from benchgen.web.pages.accounts import ANONYMOUS
from benchgen.web.session import OptionalSession, WebContext, csrf_checked, runtime_of
from benchgen.web.templating import no_referrer, path_for, redirect_to, render

router = APIRouter(dependencies=[Depends(csrf_checked)], include_in_schema=False)
TEMPLATE = "benchmarks/collaborator_invitation.html"
# What an invitation's holder may be told: which of these it is, never whether the address
# has an account.
REFUSALS = (NotFound, Conflict, PermissionDenied)


@router.get("/invitations/{token}", name="collaborator_invitation")
def invitation_page(request: Request, live: OptionalSession, token: str) -> Response:
    """The invitation for the person it invites, signed in; otherwise how to sign in first."""
    if live is None:
        return _signed_out(request, token)
    try:
        with transaction(runtime_of(request), live.principal, write=False) as ctx:
            offer = invitations.show_invitation(ctx, token)
    except REFUSALS as exc:
        return _page(request, exc.http_status, refusal=exc.message)
    return _page(request, 200, token=token, offer=offer)


@router.post("/invitations/{token}", name="collaborator_invitation_accept")
def invitation_accept(request: Request, ctx: WebContext, token: str) -> Response:
    """Accept: the signed-in person becomes a collaborator on the benchmark."""
    try:
        with undo_on_error(ctx):
            offer = invitations.accept_invitation(ctx, token)
    except REFUSALS as exc:
        return _page(request, exc.http_status, refusal=exc.message)
    target = path_for(request, "benchmark", benchmark_id=offer.benchmark_id)
    return no_referrer(
        redirect_to(request, target, f"You are now a collaborator on {offer.title}.")
    )


def _signed_out(request: Request, token: str) -> Response:
    with transaction(runtime_of(request), ANONYMOUS, write=False) as ctx:
        can_sign_up = signup.signup_mode(ctx) == "open"
    here = path_for(request, "collaborator_invitation", token=token)
    signin = f"{path_for(request, 'signin')}?next={quote(here, safe='')}"
    return _page(request, 200, signin=signin, can_sign_up=can_sign_up)


def _page(
    request: Request,
    status_code: int,
    *,
    token: str = "",
    offer: invitations.Offer | None = None,
    refusal: str = "",
    signin: str = "",
    can_sign_up: bool = False,
) -> Response:
    """The invitation (`offer`), why it cannot be taken (`refusal`), or how to sign in first.
    Never stored by a browser or proxy, nor named to another page: its address is the
    invitation's secret."""
    response = render(
        request,
        TEMPLATE,
        status_code,
        token=token,
        offer=offer,
        refusal=refusal,
        signin=signin,
        can_sign_up=can_sign_up,
    )
    response.headers["cache-control"] = "no-store"
    return no_referrer(response)
