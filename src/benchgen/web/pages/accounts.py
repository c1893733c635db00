"""Signing in and out, signing up (open, or by an admin's invite), and verifying an email."""

from __future__ import annotations

from typing import Annotated
from urllib.parse import quote

from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import Response
from starlette.background import BackgroundTask

from benchgen.core.context import Context, Principal
from benchgen.core.errors import (
    BenchGenError,
    InvalidInput,
    NotFound,
    PermissionDenied,
    RateLimited,
)
from benchgen.core.permissions import Action
from benchgen.services.accounts import links, mail, sessions, signup, users
from benchgen.services.runtime import Runtime, transaction
from benchgen.web.addresses import client_address
from benchgen.web.session import (
    SESSION_COOKIE,
    OptionalSession,
    clear_session_cookie,
    csrf_checked,
    runtime_of,
    set_session_cookie,
)
from benchgen.web.templating import no_referrer, path_for, redirect, redirect_to, render

router = APIRouter(dependencies=[Depends(csrf_checked)], include_in_schema=False)
# Pages used before anyone is known (sign-in, sign-up, links): no grants; each service they
# call decides alone (the password, the sign-up mode, the link's secret).
ANONYMOUS = Principal.system("signin", frozenset())
# Sends account mail after the response: it claims queued mail and records how sending went.
_MAILER = Principal.system("account-mail", frozenset({Action.MAIL_SEND}))
SIGNUP_FIELDS = ("email", "display_name", "password", "password_again")
# Longer than any address of ours that a person would be sent back to.
_NEXT_MAX = 2000


def safe_next(raw: str | None, fallback: str) -> str:
    """Where to go after sign-in: a path on this site only. Anything with a scheme, a host
    ('//evil.example', '/\\evil.example') or a control character could send the person away;
    an overlong one (a crafted link) is dropped rather than refused, which would keep the
    person from signing in at all."""
    if not raw or not raw.startswith("/") or raw.startswith(("//", "/\\")):
        return fallback
    if len(raw) > _NEXT_MAX or any(ord(char) < 0x21 or char == "\\" for char in raw):
        return fallback
    return raw


def field_problems(exc: InvalidInput, fields: tuple[str, ...]) -> dict[str, str]:
    """Each problem under the form field it concerns ("" for the rest), to show beside it."""
    problems: dict[str, str] = {}
    for error in exc.errors:
        loc = [str(part) for part in error.get("loc", [])]
        where = next((part for part in loc if part in fields), "")
        problems.setdefault(where, str(error.get("msg", "")))
    return problems


def send_mail_after(request: Request, response: Response, to_email: str) -> Response:
    """Send the account mail just queued for `to_email` once the response is out, when SMTP is
    configured (otherwise it waits in the outbox for the operator). Sending after the
    response keeps a slow mail server from delaying the page, or from telling by its delay
    whether a reset request found an account."""
    runtime = runtime_of(request)
    if runtime.settings.smtp_url:
        response.background = BackgroundTask(_deliver, runtime, to_email)
    return response


def _deliver(runtime: Runtime, to_email: str) -> None:
    # A write unit of work: claiming the queued mail marks it `sending`, which a read one must
    # not do (a deferred SQLite transaction fails to upgrade while another writer commits).
    with transaction(runtime, _MAILER) as ctx:
        letters = mail.queued_account_mail(ctx, to_email)
    for letter in letters:
        error = mail.send_letter(runtime.settings, letter)
        with transaction(runtime, _MAILER) as ctx:
            mail.record_outcome(ctx, letter.id, error)


# Sessions end with a new password; API tokens do not (scripts and CI hold them), so say so.
TOKENS_STAY = (
    " API tokens keep working: revoke any you do not recognise under Settings → API tokens."
)


def open_browser_session(request: Request, ctx: Context, user: users.UserView) -> str:
    """A fresh session for `user` on this browser, in the caller's unit of work; returns the
    cookie's secret. The session the browser had before (if any) ends: rotation."""
    made = sessions.open_session(
        ctx, user, client_address(request), request.headers.get("user-agent", "")
    )
    end_browser_session(request, ctx)
    return made.secret


def end_browser_session(request: Request, ctx: Context) -> None:
    """End the session behind this browser's cookie, if it is live."""
    old_secret = request.cookies.get(SESSION_COOKIE)
    if old_secret:
        sessions.end_session(ctx, old_secret)


def signed_in_redirect(request: Request, secret: str, target: str, flash: str = "") -> Response:
    """Go on to `target` with the new session's cookie."""
    response = redirect_to(request, target, flash)
    set_session_cookie(request, response, secret)
    return response


def _signup_mode(request: Request) -> str:
    with transaction(runtime_of(request), ANONYMOUS, write=False) as ctx:
        return signup.signup_mode(ctx)


@router.get("/signin", name="signin")
def signin_page(request: Request, live: OptionalSession, next: str = "") -> Response:
    """The sign-in form (a signed-in person goes straight on)."""
    target = safe_next(next, path_for(request, "dashboard"))
    if live is not None:
        return redirect_to(request, target)
    page = _signin_form(request, target, "", "")
    # `next` may be a page whose address is its secret (a collaborator invitation).
    return no_referrer(page) if next else page


def _signin_form(
    request: Request, target: str, email: str, error: str, status_code: int = 200
) -> Response:
    return render(
        request,
        "accounts/signin.html",
        status_code,
        next_path=target,
        email=email,
        error=error,
        # Too many tries is no fault of what was typed: the fields are not marked wrong.
        fields_wrong=status_code in (401, 422),
        can_sign_up=_signup_mode(request) == "open",
    )


@router.post("/signin", name="signin_submit")
def signin_submit(
    request: Request,
    # No length limits here: a refused field would lose the form; the services (and
    # `safe_next`) check them.
    email: Annotated[str, Form()] = "",
    password: Annotated[str, Form()] = "",
    next: Annotated[str, Form()] = "",
) -> Response:
    """Check the password; on success a new session (and cookie) replaces any old one."""
    target = safe_next(next, path_for(request, "dashboard"))
    if not email.strip() or not password:
        return _signin_form(request, target, email, "Enter your email and your password.", 422)
    address = client_address(request)
    agent = request.headers.get("user-agent", "")
    try:
        with transaction(runtime_of(request), ANONYMOUS) as ctx:
            made = sessions.sign_in(ctx, email, password, address, agent)
            if made is not None:
                end_browser_session(request, ctx)
    except RateLimited as exc:
        return _signin_form(request, target, email, exc.message, 429)
    if made is None:
        return _signin_form(request, target, email, "Wrong email or password.", 401)
    response = redirect_to(request, target)
    set_session_cookie(request, response, made.secret)
    return response


@router.post("/signout", name="signout")
def signout(request: Request, live: OptionalSession) -> Response:
    """End this session on the server and in the browser."""
    secret = request.cookies.get(SESSION_COOKIE)
    if live is not None and secret:
        with transaction(runtime_of(request), ANONYMOUS) as ctx:
            sessions.end_session(ctx, secret)
    response = redirect(request, "signin", flash="You are signed out.")
    clear_session_cookie(response)
    return response


@router.get("/signup", name="signup")
def signup_page(request: Request, live: OptionalSession, invite: str = "") -> Response:
    """The sign-up form, or why there is none (closed, or an invite is needed or dead)."""
    if live is not None:
        return redirect(request, "dashboard", flash="You are signed in already.")
    with transaction(runtime_of(request), ANONYMOUS, write=False) as ctx:
        mode = signup.signup_mode(ctx)
        invited = signup.invite_email(ctx, invite[:200]) if invite else None
    page = _signup_form(request, mode, invite, invited, {"email": invited or ""}, {})
    # An invite's address is its secret, as a reset link's is.
    return no_referrer(page) if invite else page


def _signup_form(
    request: Request,
    mode: str,
    invite: str,
    invited: str | None,
    typed: dict[str, str],
    problems: dict[str, str],
    status_code: int = 200,
) -> Response:
    if mode == "closed":
        refusal = "Sign-up is closed here; ask an administrator for an account."
    elif invite and invited is None:
        refusal = f"{links.DEAD_LINK} Ask the administrator for a new invite."
    elif mode == "invite" and invited is None:
        refusal = "Sign-up here needs an invite: ask an administrator to send you one."
    else:
        refusal = ""
    return render(
        request,
        "accounts/signup.html",
        status_code,
        refusal=refusal,
        invite=invite if invited else "",
        invited=invited,
        form={field: typed.get(field, "") for field in ("email", "display_name")},
        problems=problems,
    )


@router.post("/signup", name="signup_submit")
def signup_submit(
    request: Request,
    # No length limits here: a refused field would lose the form; the services check them.
    email: Annotated[str, Form()] = "",
    display_name: Annotated[str, Form()] = "",
    password: Annotated[str, Form()] = "",
    password_again: Annotated[str, Form()] = "",
    invite: Annotated[str, Form()] = "",
) -> Response:
    """Make the account and sign it in; a self-made one gets a link to verify its email."""
    typed = {"email": email, "display_name": display_name}
    runtime = runtime_of(request)
    with transaction(runtime, ANONYMOUS, write=False) as ctx:
        mode = signup.signup_mode(ctx)
        invited = signup.invite_email(ctx, invite) if invite else None
    if password != password_again:
        problems = {"password_again": "does not match the password"}
        return _signup_form(request, mode, invite, invited, typed, problems, 422)
    try:
        with transaction(runtime, ANONYMOUS) as ctx:
            user = signup.sign_up(
                ctx, email, password, display_name, invite, client_address(request)
            )
            secret = open_browser_session(request, ctx, user) if user is not None else ""
    except InvalidInput as exc:
        problems = field_problems(exc, SIGNUP_FIELDS)
        return _signup_form(request, mode, invite, invited, typed, problems, 422)
    except BenchGenError as exc:
        problems = {"": exc.message}
        return _signup_form(request, mode, invite, invited, typed, problems, exc.http_status)
    if user is None:
        return _signup_form(request, mode, invite, invited, typed, {"": signup.TAKEN}, 409)
    note = "" if invited else f" We sent a link to {user.email}: follow it to verify the address."
    response = signed_in_redirect(
        request, secret, path_for(request, "dashboard"), f"Welcome!{note}"
    )
    return send_mail_after(request, response, user.email)


@router.get("/account/verify/{token}", name="verify_email")
def verify_page(request: Request, token: str, live: OptionalSession) -> Response:
    """A button to confirm the email (a link followed by a mail scanner changes nothing), for
    the account the link was sent for, signed in; anyone else is told to sign in to it."""
    acting = live.principal if live is not None else ANONYMOUS
    with transaction(runtime_of(request), acting, write=False) as ctx:
        alive = links.verification_is_live(ctx, token)
        mine = alive and links.verification_is_mine(ctx, token)
    if not alive:
        return render(request, "accounts/dead_link.html", 404, purpose="verify")
    return _verify_form(request, token, "" if mine else links.NOT_YOURS)


def _verify_form(request: Request, token: str, refusal: str, status_code: int = 200) -> Response:
    """The confirm button, or why it is not offered and where to sign in (coming back here)."""
    here = path_for(request, "verify_email", token=token)
    signin = f"{path_for(request, 'signin')}?next={quote(here, safe='')}"
    page = render(
        request, "accounts/verify.html", status_code, token=token, refusal=refusal, signin=signin
    )
    return no_referrer(page)


@router.post("/account/verify/{token}", name="verify_email_submit")
def verify_submit(request: Request, token: str, live: OptionalSession) -> Response:
    """Verify the email the link was sent to, when it is the signed-in person's own."""
    acting = live.principal if live is not None else ANONYMOUS
    try:
        with transaction(runtime_of(request), acting) as ctx:
            user = links.verify_email(ctx, token)
    except NotFound:
        return render(request, "accounts/dead_link.html", 404, purpose="verify")
    except PermissionDenied as exc:
        return _verify_form(request, token, exc.message, exc.http_status)
    return redirect(request, "account", flash=f"Thank you: {user.email} is verified.")
