"""Errors on web routes: one HTML error page, and a sign-in redirect when a session is needed."""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import quote

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from starlette.exceptions import HTTPException

from benchgen.core.errors import BenchGenError, InvalidInput, PermissionDenied, Unauthenticated
from benchgen.web.places import described
from benchgen.web.session import SignInRequired
from benchgen.web.templating import path_for, redirect_to, render

log = logging.getLogger(__name__)
_TITLES = {
    400: "Bad request",
    401: "Please sign in",
    402: "Not enough credits",
    403: "Not allowed",
    404: "Not found",
    405: "Not allowed here",
    409: "Not possible right now",
    413: "Too large",
    422: "Please check what you entered",
    429: "Slow down",
    500: "Something went wrong",
    503: "Busy",
}


async def page_for_error(request: Request, exc: Exception) -> Response:
    """The web app's answer to any failure on a page route."""
    if isinstance(exc, SignInRequired | Unauthenticated):
        next_path, note = request.url.path, ""
        if isinstance(exc, SignInRequired):
            next_path, note = exc.next_path, exc.note
        return redirect_to(request, f"{path_for(request, 'signin')}?next={quote(next_path)}", note)
    status, message, page = 500, "Something went wrong on the server; it was logged.", ""
    problems: list[str] = []
    back: tuple[str, str] | None = None
    if isinstance(exc, BenchGenError):
        status, message = exc.http_status, exc.message
        if isinstance(exc, InvalidInput):
            message, problems = _worded(message, exc.details.get("errors") or [])
        if isinstance(exc, PermissionDenied):
            page = str(exc.details.get("page", ""))
            back = _object_page(request)
    elif isinstance(exc, RequestValidationError):
        status, message = 422, "Some fields are missing or invalid."
        problems = [described(error) for error in exc.errors()]
    elif isinstance(exc, HTTPException):
        status = exc.status_code
        message = "There is no such page." if status == 404 else str(exc.detail)
    else:
        log.error("unexpected error on %s", request.url.path, exc_info=exc)
    response = render(
        request,
        "error.html",
        status_code=status,
        title=_TITLES.get(status, "Error"),
        message=message,
        # A problem that only repeats the message would show the same text twice.
        problems=[problem for problem in problems if problem != message],
        page=page,
        back=back,
    )
    if isinstance(exc, HTTPException) and exc.headers:
        response.headers.update(exc.headers)
    return response


def _worded(message: str, errors: list[dict[str, Any]]) -> tuple[str, list[str]]:
    """A service's message and problems with their places in words: the message names the
    first problem by its internal path (`questions.0.prompt: …`), as the API shows it."""
    if errors:
        first = errors[0]
        internal = ".".join(str(part) for part in first.get("loc") or [])
        said = f"{internal}: {first.get('msg', '')}"
        if internal and message.startswith(said):
            message = described(first) + message.removeprefix(said)
    return message, [described(error) for error in errors]


def _object_page(request: Request) -> tuple[str, str] | None:
    """The refused object's own page (path, label), to go on from a refusal; None when the
    refusal came from that very page."""
    params = request.path_params
    if "benchmark_id" in params:
        found = (path_for(request, "benchmark", benchmark_id=params["benchmark_id"]), "benchmark")
    elif "run_id" in params:
        found = (path_for(request, "run", run_id=params["run_id"]), "run")
    else:
        return None
    return None if found[0] == request.url.path else found
