"""The web door's plumbing: the session cookie, CSRF checks, and a unit of work per request."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from typing import Annotated
from urllib.parse import urlsplit

from fastapi import Depends, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.dependencies.models import Dependant
from fastapi.responses import Response

from benchgen.core.context import Context, Principal
from benchgen.core.errors import PermissionDenied
from benchgen.core.storable import FORM_TYPES, require_storable_fields
from benchgen.services.accounts import sessions
from benchgen.services.runtime import Runtime, transaction

SESSION_COOKIE = "bg_session"
# Before sign-in there is no session to bind a CSRF token to: the sign-in, sign-up and reset
# forms use a random cookie that the form must echo (double submit).
PRESESSION_COOKIE = "bg_pre"
CSRF_FIELD = "csrf_token"
CSRF_HEADER = "x-csrf-token"
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
# Reading sessions may only look at session rows and stamp last-seen: no grants.
_DOORMAN = Principal.system("web-sessions", frozenset())
# Forms whose services refuse a NUL themselves, before anything is stored or looked up by it: the
# page shows the refusal next to its field with all that was typed, where the screening below
# would answer with an error page and lose the form (a NUL comes with text pasted from a PDF).
_FORMS_SCREENED_BY_THEIR_PAGE = frozenset({"benchmark_create", "chat_new", "chat_send"})
# Routes that only end a session: with none live there is nothing to forge, and a Sign out
# clicked after the session ended (idle, or signed out in another tab) must not be refused as
# "sent from another site".
_HARMLESS_WITHOUT_SESSION = frozenset({"signout"})
_SESSION_ENDED = (
    "Your session ended, so that form was not sent and nothing changed. Sign in to go back to "
    "the page, then send it again."
)


class SignInRequired(Exception):
    """The page needs a signed-in person; the error page redirects to sign-in, with `note`
    shown there when there is something to explain."""

    def __init__(self, next_path: str, note: str = "") -> None:
        super().__init__(next_path)
        self.next_path = next_path
        self.note = note


def runtime_of(request: Request) -> Runtime:
    """The runtime the app was built with."""
    runtime: Runtime = request.app.state.runtime
    return runtime


def current_session(request: Request) -> sessions.LiveSession | None:
    """The signed-in session behind the cookie, checked against the database on every request."""
    if hasattr(request.state, "web_session"):
        found: sessions.LiveSession | None = request.state.web_session
        return found
    secret = request.cookies.get(SESSION_COOKIE)
    live = None
    if secret:
        runtime = runtime_of(request)
        with transaction(runtime, _DOORMAN, write=False) as ctx:
            live = sessions.find_session(ctx, secret)
            due = live is not None and sessions.seen_is_due(ctx, live.id)
        if live is not None and due:
            with transaction(runtime, _DOORMAN) as ctx:
                sessions.record_seen(ctx, live.id)
    request.state.web_session = live
    return live


OptionalSession = Annotated[sessions.LiveSession | None, Depends(current_session)]


def signed_in(request: Request, live: OptionalSession) -> sessions.LiveSession:
    """The session, or a redirect to sign-in that comes back here afterwards."""
    if live is None:
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        raise SignInRequired(target)
    return live


SessionDep = Annotated[sessions.LiveSession, Depends(signed_in)]


def presession_token(request: Request) -> str:
    """The anonymous CSRF value for this browser (made on first sight; see `remember`)."""
    token = request.cookies.get(PRESESSION_COOKIE) or getattr(request.state, "presession", None)
    if token is None:
        token = secrets.token_urlsafe(32)
        request.state.presession = token
    return str(token)


def csrf_token(request: Request) -> str:
    """What this browser's forms must send back."""
    live = current_session(request)
    return live.csrf_token if live is not None else presession_token(request)


async def storable_input(request: Request) -> None:
    """Refuse a page request whose path, query or form holds what no database can store (a
    NUL character): on PostgreSQL every such request was a 500, signing in included. The forms
    of `_FORMS_SCREENED_BY_THEIR_PAGE` are left to their pages.

    Raises:
        InvalidInput: the first such value, with its place.
    """
    require_storable_fields("path", request.path_params.items())
    require_storable_fields("query", request.query_params.multi_items())
    if _route_name(request) in _FORMS_SCREENED_BY_THEIR_PAGE:
        return
    if request.headers.get("content-type", "").startswith(FORM_TYPES):
        require_storable_fields("body", (await request.form()).multi_items())


async def csrf_checked(request: Request) -> None:
    """Refuse a state-changing request that does not echo the browser's CSRF token.

    Raises:
        PermissionDenied: the token is missing or wrong (a forged cross-site request, or a form
            left open across a sign-out).
    """
    if request.method in _SAFE_METHODS:
        return
    # The session is looked up in the database: in a worker thread, never on the event loop
    # (a stamp of last-seen may wait for SQLite's write lock, and every request with it).
    live = await run_in_threadpool(current_session, request)
    if live is None and _route_name(request) in _HARMLESS_WITHOUT_SESSION:
        return
    expected = live.csrf_token if live is not None else request.cookies.get(PRESESSION_COOKIE)
    sent = request.headers.get(CSRF_HEADER)
    if sent is None and "form" in request.headers.get("content-type", ""):
        value = (await request.form()).get(CSRF_FIELD)
        sent = value if isinstance(value, str) else None
    if not expected or not sent or not _same_token(expected, sent):
        if live is None and _needs_session(request) and "hx-request" not in request.headers:
            # A form sent after its session ended (idle, signed out in another tab): "expired
            # or sent from another site" hid that signing in again is the way on.
            raise SignInRequired(_form_page(request), _SESSION_ENDED)
        # Reloading this answer sends the stale form again, and reloading the form loses what
        # was typed; going back fetches the form afresh (pages are never cached) and the browser
        # puts the typing back in it.
        raise PermissionDenied(
            "This form has expired or was sent from another site, so nothing changed. Go back"
            " to it: the page loads afresh with what you typed, ready to send again.",
            {"reason": "csrf"},
        )


def _same_token(expected: str, sent: str) -> bool:
    """Compare in constant time. As bytes: the client writes both the form's value and the
    pre-session cookie, and `compare_digest` raises TypeError on a str outside ASCII."""
    return secrets.compare_digest(expected.encode(), sent.encode())


def _route_name(request: Request) -> str | None:
    name = getattr(request.scope.get("route"), "name", None)
    return name if isinstance(name, str) else None


def _needs_session(request: Request) -> bool:
    """Whether the route answering this request only serves a signed-in person."""
    dependant = getattr(request.scope.get("route"), "dependant", None)
    return isinstance(dependant, Dependant) and _depends_on(dependant, signed_in)


def _depends_on(dependant: Dependant, call: object) -> bool:
    return any(found.call is call or _depends_on(found, call) for found in dependant.dependencies)


def _form_page(request: Request) -> str:
    """The page the form was sent from (its Referer on this site), to go back to after signing
    in; the dashboard when the browser did not say. The sign-in page checks it is local."""
    dashboard = str(request.app.url_path_for("dashboard"))
    try:
        referer = urlsplit(request.headers.get("referer", ""))
    except ValueError:  # the client wrote what no browser sends ('http://[x')
        return dashboard
    if referer.netloc == request.url.netloc and referer.path:
        return referer.path + (f"?{referer.query}" if referer.query else "")
    return dashboard


class _Refused(Exception):
    """Raised after the page answered with an error status, to roll its transaction back."""


def web_context(request: Request, live: SessionDep) -> Iterator[Context]:
    """One transaction as the signed-in person; reads take no write lock.

    A page that answers with an error status (a form shown again with its problems) commits
    nothing, even when a service wrote something before refusing: a refused request changes
    nothing, whichever page forgot a savepoint.
    """
    write = request.method not in _SAFE_METHODS
    try:
        with transaction(runtime_of(request), live.principal, write=write) as ctx:
            yield ctx
            if getattr(request.state, "refused", False):
                raise _Refused
    except _Refused:
        pass


# Committed before the response is sent, as in the API: the redirect after a form always
# lands on a page that sees what the form wrote.
WebContext = Annotated[Context, Depends(web_context, scope="function")]


def remember(request: Request, response: Response) -> Response:
    """Set the anonymous CSRF cookie when this request made one."""
    secure = request.url.scheme == "https"
    made = getattr(request.state, "presession", None)
    if made is not None and PRESESSION_COOKIE not in request.cookies:
        response.set_cookie(
            PRESESSION_COOKIE, made, httponly=True, samesite="lax", secure=secure, path="/"
        )
    return response


def set_session_cookie(request: Request, response: Response, secret: str) -> None:
    """Put a new session id in an HttpOnly, SameSite=Lax cookie (Secure over https)."""
    response.set_cookie(
        SESSION_COOKIE,
        secret,
        httponly=True,
        samesite="lax",
        secure=request.url.scheme == "https",
        path="/",
        max_age=runtime_of(request).settings.session_max_hours * 3600,
    )


def clear_session_cookie(response: Response) -> None:
    """Forget the session id in the browser (the server side is revoked separately)."""
    response.delete_cookie(SESSION_COOKIE, path="/")
