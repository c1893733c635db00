"""One error envelope for every failure: {"error": {"code", "message", "details"}}."""

from __future__ import annotations

import math
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from benchgen.core.errors import BenchGenError, RateLimited


def envelope(status: int, code: str, message: str, details: Any = None) -> JSONResponse:
    """The JSON response every failure uses."""
    body = {"error": {"code": code, "message": message, "details": details or {}}}
    return JSONResponse(body, status_code=status)


def install(app: FastAPI) -> None:
    """Map domain errors and the framework's own 404/405/422 onto the envelope."""

    @app.exception_handler(BenchGenError)
    async def _domain(request: Request, exc: BenchGenError) -> JSONResponse:
        response = envelope(exc.http_status, exc.code, exc.message, exc.details)
        if exc.http_status == 401:
            response.headers["WWW-Authenticate"] = "Bearer"
        if isinstance(exc, RateLimited):
            wait = (exc.retry_at - request.app.state.runtime.clock.now()).total_seconds()
            response.headers["Retry-After"] = str(max(1, math.ceil(wait)))
        return response

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        errors = [{"loc": list(e["loc"]), "msg": e["msg"]} for e in exc.errors()]
        first = errors[0] if errors else {"loc": [], "msg": "invalid request"}
        where = ".".join(str(part) for part in first["loc"])
        return envelope(422, "invalid_input", f"{where}: {first['msg']}", {"errors": errors})

    @app.exception_handler(HTTPException)
    async def _http(_: Request, exc: HTTPException) -> JSONResponse:
        codes = {404: "not_found", 405: "method_not_allowed", 401: "unauthenticated"}
        response = envelope(
            exc.status_code, codes.get(exc.status_code, "http_error"), str(exc.detail)
        )
        for name, value in (exc.headers or {}).items():
            response.headers[name] = value
        return response
