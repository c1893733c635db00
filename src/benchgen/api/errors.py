"""One error envelope for every failure: {"error": {"code", "message", "details"}}."""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import FastAPI, Request, params
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi.routing import APIRoute
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException

from benchgen.core.errors import BenchGenError, RateLimited, Unavailable


class ErrorBody(BaseModel):
    """What went wrong: a stable `code`, a readable `message`, and structured `details`."""

    code: str
    message: str
    details: dict[str, Any] = Field(default_factory=dict)


class ErrorEnvelope(BaseModel):
    """Every failure's body."""

    error: ErrorBody


_DESCRIPTIONS = {
    401: "No valid personal API token: missing, malformed, unknown, expired or revoked",
    402: "The credit balance cannot cover the most this could cost",
    403: "The token lacks the scope this needs, or your role does not allow it",
    404: "No such object, or one you may not see",
    409: "The object's state does not allow this (frozen questions, already ended, …)",
    413: "The request body is larger than this route accepts (`details.limit_bytes`)",
    422: "Invalid input: `details.errors` lists each problem with its place (`loc`)",
    429: "A rate limit is reached (creations, or runs on a benchmark by people outside its "
    "team): `Retry-After` says when to try again",
    503: "The database is busy and nothing was changed: retry after `Retry-After` seconds",
}
_HEADERS = {
    401: {"WWW-Authenticate": {"schema": {"type": "string"}, "required": True}},
    429: {
        "Retry-After": {
            "description": "Seconds until it will be allowed",
            "schema": {"type": "integer", "minimum": 1},
            "required": True,
        }
    },
    503: {
        "Retry-After": {
            "description": "Seconds to wait before sending the same request again",
            "schema": {"type": "integer", "minimum": 1},
            "required": True,
        }
    },
}


def responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI entries for these failure statuses, all with the envelope as body."""
    return {
        status: {
            "model": ErrorEnvelope,
            "description": _DESCRIPTIONS[status],
            **({"headers": _HEADERS[status]} if status in _HEADERS else {}),
        }
        for status in statuses
    }


# What any /api/v1 route may answer; routes add the statuses particular to them.
COMMON = responses(401, 403, 404, 413, 422, 503)


def envelope(status: int, code: str, message: str, details: Any = None) -> JSONResponse:
    """The JSON response every failure uses."""
    body = {"error": {"code": code, "message": message, "details": details or {}}}
    return JSONResponse(body, status_code=status)


# Renders an error as a page for the web app's routes.
PageErrors = Callable[[Request, Exception], Awaitable[Response]]


def _json_sent_as_other(request: Request) -> bool:
    """Whether the route takes a JSON body and the request sent one under another type."""
    route = request.scope.get("route")
    if not isinstance(route, APIRoute) or route.body_field is None:
        return False
    if isinstance(route.body_field.field_info, params.Form):
        return False
    headers = request.headers
    if headers.get("content-length", "0") == "0" and "transfer-encoding" not in headers:
        return False  # no body at all: the fields it lacks say more
    kind = headers.get("content-type", "").split(";", 1)[0].strip().lower()
    return kind != "application/json" and not (
        kind.startswith("application/") and kind.endswith("+json")
    )


def install(app: FastAPI, pages: PageErrors | None = None) -> None:
    """Map domain errors and the framework's own 404/405/422 onto the envelope; outside
    `/api/` they go to `pages` (the web app's HTML error page) when one is given."""

    def for_pages(request: Request) -> bool:
        return not request.url.path.startswith("/api/")

    @app.exception_handler(BenchGenError)
    async def _domain(request: Request, exc: BenchGenError) -> Response:
        if pages is not None and for_pages(request):
            return await pages(request, exc)
        response = envelope(exc.http_status, exc.code, exc.message, exc.details)
        if exc.http_status == 401:
            response.headers["WWW-Authenticate"] = "Bearer"
        if isinstance(exc, RateLimited):
            wait = (exc.retry_at - request.app.state.runtime.clock.now()).total_seconds()
            response.headers["Retry-After"] = str(max(1, math.ceil(wait)))
        if isinstance(exc, Unavailable):
            response.headers["Retry-After"] = str(max(1, exc.retry_after))
        return response

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> Response:
        if pages is not None and for_pages(request):
            return await pages(request, exc)
        # Starlette's last resort answers plain text; this keeps the envelope. The exception's
        # text stays in the server log (the framework re-raises it after this response), never
        # in the body: it may name tables, paths or values of other users.
        return envelope(500, "internal", "Something went wrong on the server; it was logged.")

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> Response:
        if pages is not None and for_pages(request):
            return await pages(request, exc)
        errors = [{"loc": list(e["loc"]), "msg": e["msg"]} for e in exc.errors()]
        if _json_sent_as_other(request) and any(e["loc"][:1] == ["body"] for e in errors):
            # The framework reads only a JSON content type as JSON and then explains that raw
            # bytes are no object; the cause is the header, not the fields.
            errors = [
                {"loc": ["body"], "msg": "must be JSON, sent as Content-Type: application/json"}
            ]
        first = errors[0] if errors else {"loc": [], "msg": "invalid request"}
        where = ".".join(str(part) for part in first["loc"])
        return envelope(422, "invalid_input", f"{where}: {first['msg']}", {"errors": errors})

    @app.exception_handler(HTTPException)
    async def _http(request: Request, exc: HTTPException) -> Response:
        if pages is not None and for_pages(request):
            return await pages(request, exc)
        if exc.status_code == 400:
            # The framework's "error parsing the body" (e.g. a body that is not UTF-8): invalid
            # input like any other, so it gets the same status, code and shape.
            errors = [{"loc": ["body"], "msg": str(exc.detail)}]
            return envelope(422, "invalid_input", f"body: {exc.detail}", {"errors": errors})
        codes = {404: "not_found", 405: "method_not_allowed", 401: "unauthenticated"}
        response = envelope(
            exc.status_code, codes.get(exc.status_code, "http_error"), str(exc.detail)
        )
        for name, value in (exc.headers or {}).items():
            response.headers[name] = value
        return response
