"""Request-body size limits, enforced as bytes arrive, before any parsing or authentication."""

from __future__ import annotations

import html
import re
from collections.abc import Mapping

from starlette.datastructures import Headers
from starlette.responses import HTMLResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from benchgen.api.errors import envelope


class BodyTooLarge(Exception):
    """Raised into the app when the body being read passes the limit, so it stops reading."""


class BodyLimit:
    """Pure ASGI middleware: answers 413 (the error envelope) once a request body is larger than
    its route allows, counting the bytes as they arrive.

    A declared Content-Length over the limit is refused before the app runs; a chunked body
    (no Content-Length) is cut off at the first chunk that passes the limit. A pure ASGI
    middleware, not BaseHTTPMiddleware, so the body is never buffered here and streaming
    responses pass through untouched.
    """

    def __init__(self, app: ASGIApp, default: int, by_path: Mapping[str, int]) -> None:
        self.app = app
        self.default = default
        self.by_path = {path: n for path, n in by_path.items() if "{" not in path}
        # Route templates (`/api/v1/benchmarks/{benchmark_id}/submissions`): one segment each.
        self.by_template = [
            (re.compile(re.sub(r"\\\{[^/]*?\\\}", "[^/]+", re.escape(path))), n)
            for path, n in by_path.items()
            if "{" in path
        ]

    def limit_for(self, path: str) -> int:
        """The body limit of the route at `path`."""
        if path in self.by_path:
            return self.by_path[path]
        for pattern, limit in self.by_template:
            if pattern.fullmatch(path):
                return limit
        return self.default

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.limit_for(scope["path"])
        if _declared_length(scope) > limit:
            # Refused before a byte of the body is read, and the connection closed after.
            await _refusal(limit, scope)(scope, receive, send)
            return
        guard = _Guard(limit, receive, send)
        try:
            await self.app(scope, guard.receive, guard.send)
        except Exception:
            if not guard.exceeded:
                raise
            # The app failed because the body was cut off; the 413 below is the answer.
        if guard.exceeded and not guard.started:
            await _refusal(limit, scope)(scope, receive, send)


class _Guard:
    """The receive and send one request sees: counts body bytes, holds back the app's own
    answer (a parse error, typically) once the body was cut off."""

    def __init__(self, limit: int, receive: Receive, send: Send) -> None:
        self.limit = limit
        self.received = 0
        self.exceeded = False
        self.started = False
        self._receive = receive
        self._send = send

    async def receive(self) -> Message:
        if self.exceeded:
            raise BodyTooLarge
        message = await self._receive()
        if message["type"] == "http.request":
            self.received += len(message.get("body", b""))
            if self.received > self.limit:
                self.exceeded = True
                raise BodyTooLarge
        return message

    async def send(self, message: Message) -> None:
        if self.exceeded and not self.started:
            return  # whatever the app made of a truncated body, the answer is 413
        if message["type"] == "http.response.start":
            self.started = True
        await self._send(message)


def _declared_length(scope: Scope) -> int:
    """The Content-Length header's value; 0 when absent or unreadable (the server refuses a
    malformed one, and the bytes are counted anyway)."""
    value = Headers(scope=scope).get("content-length", "")
    return int(value) if value.isascii() and value.isdigit() else 0


def _refusal(limit: int, scope: Scope) -> Response:
    message = f"The request body is larger than the {limit} bytes this route accepts."
    if not scope["path"].startswith("/api/"):
        # A web page's form: a person reads this in the browser, so it is a page, not JSON.
        page = _PAGE.format(message=html.escape(message))
        response: Response = HTMLResponse(page, status_code=413)
    else:
        response = envelope(413, "too_large", message, {"limit_bytes": limit})
    # Closed after the answer: kept open, the server read on through the rest of the body to
    # reach the next request, and a client sending 5 GB waited 21 s to learn it was refused.
    response.headers["Connection"] = "close"
    return response


_PAGE = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Too large · BenchGen
</title></head><body><main><h1>Too large</h1><p>{message}</p><p>Go back and send something
smaller.</p></main></body></html>"""
