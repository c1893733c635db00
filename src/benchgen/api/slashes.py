"""A path under /api/v1 with a trailing slash is a 404 in the envelope, never a redirect."""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from benchgen.api.errors import envelope

PREFIX = "/api/v1/"


class NoTrailingSlash:
    """Answer `/api/v1/…/` with the 404 envelope instead of the framework's redirect.

    The redirect has no JSON body, and its `Location` is built from the scheme the app sees:
    behind a proxy that ends TLS it is `http://`, so a client that follows it sends its bearer
    token again in clear text. A 404 that names the path without the slash costs one retry.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path: str = scope.get("path", "")
        if scope["type"] != "http" or not path.startswith(PREFIX) or not path.endswith("/"):
            await self.app(scope, receive, send)
            return
        message = f"No such path; API paths never end in '/': use {path.rstrip('/')!r}."
        await envelope(404, "not_found", message)(scope, receive, send)
