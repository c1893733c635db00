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
        next_path = exc.next_path if isinstance(exc, SignInRequired) else request.url.path
        return redirect_to(f"{path_for(request, 'signin')}?next={quote(next_path)}")
    status, message, problems, page = (
        500,
        "Something went wrong on the server; it was logged.",
        [],
        "",
    )
    if isinstance(exc, BenchGenError):
        status, message = exc.http_status, exc.message
        if isinstance(exc, InvalidInput):
            problems = [_problem(error) for error in exc.details.get("errors", [])]
        if isinstance(exc, PermissionDenied):
            page = str(exc.details.get("page", ""))
    elif isinstance(exc, RequestValidationError):
        status, message = 422, "Some fields are missing or invalid."
        problems = [_problem(error) for error in exc.errors()]
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
        problems=problems,
        page=page,
    )
    if isinstance(exc, HTTPException) and exc.headers:
        response.headers.update(exc.headers)
    return response


def _problem(error: Any) -> str:
    where = ".".join(str(part) for part in error.get("loc", []) or [])
    return f"{where}: {error.get('msg', '')}" if where else str(error.get("msg", ""))
