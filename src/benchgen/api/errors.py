"""One error envelope for every failure: {"error": {"code", "message", "details"}}."""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from fastapi import FastAPI, Request, params
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi.routing import APIRoute
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException
from starlette.routing import Match

from benchgen.api.parameters import names_in
from benchgen.core.errors import BenchGenError, InvalidInput, RateLimited, Unavailable


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


def _sent_as_other(request: Request) -> str | None:
    """What the body must be, when the route takes one and the request sent one under another
    content type: a JSON body, or a multipart form (every form route takes a file)."""
    route = request.scope.get("route")
    if not isinstance(route, APIRoute) or route.body_field is None:
        return None
    headers = request.headers
    if headers.get("content-length", "0") == "0" and "transfer-encoding" not in headers:
        return None  # no body at all: the fields it lacks say more
    kind = headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if isinstance(route.body_field.field_info, params.Form):
        if kind == "multipart/form-data":
            return None
        return "must be a form with its file, sent as Content-Type: multipart/form-data"
    if kind == "application/json" or (kind.startswith("application/") and kind.endswith("+json")):
        return None
    return "must be JSON, sent as Content-Type: application/json"


# Where a request's input came from: the first part of every `loc` in a 422's `details.errors`.
PLACES = ("body", "query", "path", "header")


def _place_of(route: APIRoute, name: object) -> str:
    """Where `route` reads the input it calls `name`: a path or query parameter, else the body."""
    for place in ("path", "query", "header"):
        if name in names_in(route, place):
            return place
    return "body"


def placed(request: Request, errors: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A service's problems with each `loc` led by its place, as the framework's own are.

    Services name fields only (`["questions", 0, "answer"]`); the edge knows whether the field
    came in the path, the query or the body, so every 422 has one shape. A `loc` already led
    by a place (the edge's own checks) is kept."""
    route = request.scope.get("route")
    if not isinstance(route, APIRoute):
        return errors
    return [_placed_one(route, error) for error in errors]


def _placed_one(route: APIRoute, error: dict[str, Any]) -> dict[str, Any]:
    loc = list(error.get("loc", []))
    if loc and loc[0] in PLACES:
        return error
    return {**error, "loc": [_place_of(route, loc[0]) if loc else "body", *loc]}


# What made the framework's body parsing fail, in words; its own "There was an error parsing
# the body" says nothing a client can act on.
_PARSE_FAULTS: dict[type[BaseException], str] = {
    RecursionError: "nested too deeply",
    UnicodeDecodeError: "not UTF-8 text",
}
# Errors about the body as a whole, whose framework wording is about its own parsing.
_WHOLE_BODY = {
    "missing": "needs a JSON object; the request has no body",
    "model_attributes_type": "must be a JSON object",
    "dict_type": "must be a JSON object",
}


def _problem(error: Any) -> dict[str, Any]:
    """One of the framework's validation errors as `{"loc", "msg"}`."""
    loc = list(error["loc"])
    if error["type"] == "json_invalid":
        # The framework puts the offset of the fault into `loc`, where it reads as an index.
        reason = error.get("ctx", {}).get("error", "")
        return {"loc": ["body"], "msg": f"not valid JSON: {reason} at character {loc[-1]}"}
    if loc == ["body"] and error["type"] in _WHOLE_BODY:
        return {"loc": loc, "msg": _WHOLE_BODY[error["type"]]}
    if error["type"] == "value_error" and "Expected UploadFile" in error["msg"]:
        # A part sent without a file name (`curl -F 'file=<data.jsonl'`) arrives as text.
        return {"loc": loc, "msg": _NOT_A_FILE.format(name=loc[-1])}
    if error["type"] == "value_error":
        # The framework names its kind of check first ("Value error, must not contain …").
        return {"loc": loc, "msg": error["msg"].removeprefix("Value error, ")}
    return {"loc": loc, "msg": error["msg"]}


_NOT_A_FILE = (
    "must be a file: send it as a multipart part with a file name "
    "(curl -F '{name}=@data.jsonl', not -F '{name}=<data.jsonl')"
)


def _at_places(errors: list[dict[str, Any]], body: Any) -> list[dict[str, Any]]:
    """`errors` at places in `body` only, one error per place: a union's refusal names each of
    its members in `loc` (`["body", "answer", "constrained-str"]` and `[…, "list[str]"]` for
    `"answer": 5`; a tagged union its tag), places no client sent or can find."""
    merged: dict[tuple[Any, ...], dict[str, Any]] = {}
    for error in errors:
        loc = tuple(_untagged(error, body))
        if loc not in merged:
            merged[loc] = {**error, "loc": list(loc)}
            continue
        first = merged[loc]
        said = (
            error["msg"].removeprefix(_SHOULD) if first["msg"].startswith(_SHOULD) else error["msg"]
        )
        if said not in first["msg"]:
            first["msg"] = f"{first['msg']} or {said}"
    return list(merged.values())


_SHOULD = "Input should be "


def _untagged(error: dict[str, Any], body: Any) -> list[Any]:
    """The error's `loc` without the parts `body` has no place for: union members' names. The
    last part of a "Field required" is kept: it names the field the body lacks."""
    loc = error["loc"]
    if loc[:1] != ["body"] or body is None:  # None: not parsed, so placed by whoever refused it
        return list(loc)
    kept, here = ["body"], body
    for index, part in enumerate(loc[1:], start=1):
        inside = isinstance(here, Mapping) and part in here
        if inside or (isinstance(here, list) and type(part) is int and -1 < part < len(here)):
            here = here[part]
        elif index < len(loc) - 1 or error["msg"] != "Field required":
            continue
        kept.append(part)
    return kept


# The methods a path may take; HEAD is answered as GET (`api/head.py`).
_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")


def _allowed(request: Request) -> str:
    """Every method the request's path takes. The framework's `Allow` names only the first
    route that matched the path, and each method of a path is a route of its own here."""
    return ", ".join(
        method
        for method in _METHODS
        if any(
            route.matches({**request.scope, "method": method})[0] is Match.FULL
            for route in request.app.router.routes
        )
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
        details = exc.details
        if isinstance(exc, InvalidInput):
            details = {**details, "errors": placed(request, exc.errors)}
        response = envelope(exc.http_status, exc.code, exc.message, details)
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
        errors = _at_places([_problem(error) for error in exc.errors()], exc.body)
        must = _sent_as_other(request)
        if must and any(e["loc"][:1] == ["body"] for e in errors):
            # The framework reads only a JSON content type as JSON and a form's only as a form,
            # then explains that raw bytes are no object or that every field is missing; the
            # cause is the header, not the fields.
            errors = [{"loc": ["body"], "msg": must}]
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
            cause = exc.__cause__
            said = next(
                (text for kind, text in _PARSE_FAULTS.items() if isinstance(cause, kind)),
                str(exc.detail),
            )
            errors = [{"loc": ["body"], "msg": said}]
            return envelope(422, "invalid_input", f"body: {said}", {"errors": errors})
        codes = {404: "not_found", 405: "method_not_allowed", 401: "unauthenticated"}
        message, headers = str(exc.detail), dict(exc.headers or {})
        if exc.status_code == 405:
            headers["Allow"] = _allowed(request)
            message = f"{request.method} is not allowed here; this path takes {headers['Allow']}"
        elif exc.status_code == 404 and exc.detail == "Not Found":  # the router's: no route
            # "Not Found" alone left a client pointed at the wrong address (`--url …/api`)
            # with nothing to go on.
            message = (
                f"No such API route: {request.url.path[:200]}; the API's routes are under "
                "/api/v1 of the server's own address"
            )
        response = envelope(exc.status_code, codes.get(exc.status_code, "http_error"), message)
        for name, value in headers.items():
            response.headers[name] = value
        return response
