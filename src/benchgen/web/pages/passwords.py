"""A forgotten password: ask for a mailed link, then choose a new password through it."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import Response

from benchgen.core.errors import InvalidInput, NotFound, RateLimited
from benchgen.services.accounts import passwords, users
from benchgen.services.runtime import transaction
from benchgen.web.addresses import client_address
from benchgen.web.pages.accounts import (
    ANONYMOUS,
    TOKENS_STAY,
    field_problems,
    open_browser_session,
    send_mail_after,
    signed_in_redirect,
)
from benchgen.web.session import csrf_checked, runtime_of
from benchgen.web.templating import no_referrer, path_for, render

router = APIRouter(dependencies=[Depends(csrf_checked)], include_in_schema=False)
# After a reset that took over an account whose address was never verified.
CLAIMED = (
    " The address is now verified as yours; the account's API tokens and run webhook are"
    " removed. Check its models and benchmarks for anything you did not make."
)


@router.get("/password/forgot", name="password_forgot")
def forgot_page(request: Request) -> Response:
    """Ask for a reset link."""
    return render(request, "accounts/forgot.html", email="", problems={}, sent=False)


@router.post("/password/forgot", name="password_forgot_submit")
def forgot_submit(
    request: Request,
    # No length limit here: a refused field would lose the form; the service checks it.
    email: Annotated[str, Form()] = "",
) -> Response:
    """The same answer whether or not an account (or a verified one) has this email."""
    try:
        with transaction(runtime_of(request), ANONYMOUS) as ctx:
            passwords.request_password_reset(ctx, email, client_address(request))
    except InvalidInput as exc:
        problems = field_problems(exc, ("email",))
        return render(
            request, "accounts/forgot.html", 422, email=email, problems=problems, sent=False
        )
    except RateLimited as exc:
        problems = {"": exc.message}
        return render(
            request, "accounts/forgot.html", 429, email=email, problems=problems, sent=False
        )
    response = render(request, "accounts/forgot.html", email=email, problems={}, sent=True)
    return send_mail_after(request, response, users.normalize_email(email))


@router.get("/password/reset/{token}", name="password_reset")
def reset_page(request: Request, token: str) -> Response:
    """The new-password form, while the link is still good."""
    with transaction(runtime_of(request), ANONYMOUS, write=False) as ctx:
        live = passwords.reset_is_live(ctx, token)
    if not live:
        return render(request, "accounts/dead_link.html", 404, purpose="reset")
    return _reset_form(request, token, {})


def _reset_form(
    request: Request, token: str, problems: dict[str, str], status_code: int = 200
) -> Response:
    """The new-password form; it warns when the link takes an unverified account over."""
    with transaction(runtime_of(request), ANONYMOUS, write=False) as ctx:
        claims = passwords.reset_claims_address(ctx, token)
    page = render(
        request, "accounts/reset.html", status_code, token=token, claims=claims, problems=problems
    )
    return no_referrer(page)


@router.post("/password/reset/{token}", name="password_reset_submit")
def reset_submit(
    request: Request,
    token: str,
    # No length limits here: a refused field would lose the form; the service checks them.
    password: Annotated[str, Form()] = "",
    password_again: Annotated[str, Form()] = "",
) -> Response:
    """Set the password, sign the account out everywhere, and in here with a fresh session."""
    if password != password_again:
        problems = {"password_again": "does not match the password"}
        return _reset_form(request, token, problems, 422)
    try:
        with transaction(runtime_of(request), ANONYMOUS) as ctx:
            # Asked before the reset, which verifies the address.
            claims = passwords.reset_claims_address(ctx, token)
            user = passwords.reset_password(ctx, token, password)
            secret = open_browser_session(request, ctx, user)
    except InvalidInput as exc:
        return _reset_form(request, token, field_problems(exc, ("password",)), 422)
    except NotFound:
        return render(request, "accounts/dead_link.html", 404, purpose="reset")
    flash = "Your password is changed, and every other session of this account is signed out."
    flash += CLAIMED if claims else TOKENS_STAY
    return signed_in_redirect(request, secret, path_for(request, "dashboard"), flash)
