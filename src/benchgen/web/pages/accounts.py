"""Signing in and out."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import Response

from benchgen.core.context import Principal
from benchgen.core.errors import RateLimited
from benchgen.services.accounts import sessions
from benchgen.services.runtime import transaction
from benchgen.web.addresses import client_address
from benchgen.web.session import (
    SESSION_COOKIE,
    OptionalSession,
    clear_session_cookie,
    csrf_checked,
    runtime_of,
    set_session_cookie,
)
from benchgen.web.templating import path_for, redirect, redirect_to, render

router = APIRouter(dependencies=[Depends(csrf_checked)], include_in_schema=False)
# Sign-in acts before anyone is known: it may only read accounts and write sessions.
_SIGNIN = Principal.system("signin", frozenset())


def safe_next(raw: str | None, fallback: str) -> str:
    """Where to go after sign-in: a path on this site only. Anything with a scheme, a host
    ('//evil.example', '/\\evil.example') or a control character could send the person away."""
    if not raw or not raw.startswith("/") or raw.startswith(("//", "/\\")):
        return fallback
    if any(ord(char) < 0x21 or char == "\\" for char in raw):
        return fallback
    return raw


@router.get("/signin", name="signin")
def signin_page(request: Request, live: OptionalSession, next: str = "") -> Response:
    """The sign-in form (a signed-in person goes straight on)."""
    target = safe_next(next, path_for(request, "dashboard"))
    if live is not None:
        return redirect_to(target)
    return render(request, "accounts/signin.html", next_path=target, email="", error="")


@router.post("/signin", name="signin_submit")
def signin_submit(
    request: Request,
    email: Annotated[str, Form(max_length=320)],
    password: Annotated[str, Form(max_length=1024)],
    next: Annotated[str, Form(max_length=2000)] = "",
) -> Response:
    """Check the password; on success a new session (and cookie) replaces any old one."""
    target = safe_next(next, path_for(request, "dashboard"))
    address = client_address(request)
    agent = request.headers.get("user-agent", "")
    try:
        with transaction(runtime_of(request), _SIGNIN) as ctx:
            made = sessions.sign_in(ctx, email, password, address, agent)
            # Rotation: the session this browser had before (if any) ends with this sign-in.
            old_secret = request.cookies.get(SESSION_COOKIE)
            old = sessions.find_session(ctx, old_secret) if old_secret else None
            if made is not None and old is not None:
                sessions.end_session(ctx, old.id)
    except RateLimited as exc:
        return render(
            request, "accounts/signin.html", 429, next_path=target, email=email, error=exc.message
        )
    if made is None:
        return render(
            request,
            "accounts/signin.html",
            401,
            next_path=target,
            email=email,
            error="Wrong email or password.",
        )
    response = redirect_to(target)
    set_session_cookie(request, response, made.secret)
    return response


@router.post("/signout", name="signout")
def signout(request: Request, live: OptionalSession) -> Response:
    """End this session on the server and in the browser."""
    if live is not None:
        with transaction(runtime_of(request), _SIGNIN) as ctx:
            sessions.end_session(ctx, live.id)
    response = redirect(request, "signin", flash="You are signed out.")
    clear_session_cookie(response)
    return response
