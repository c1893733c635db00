"""Security headers on every web response: a strict Content-Security-Policy and friends, and
no caching of pages."""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

# No inline scripts, no eval, nothing from other origins; frame-ancestors 'none' keeps the
# Approve button from being framed and clickjacked. Chart.js sizes its canvas through the
# CSSOM, which style-src does not govern, so styles need no 'unsafe-inline' either.
CSP = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "font-src 'self'",
        "object-src 'none'",
        "base-uri 'self'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
)
_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
]


class SecurityHeaders:
    """ASGI middleware adding the headers to every HTTP response that does not set its own."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = message.get("headers", [])
                present = {name.lower() for name, _ in headers}
                extra = [(name, value) for name, value in _HEADERS if name not in present]
                if b"cache-control" not in present and _is_private(headers):
                    # A page may hold answer keys or a chat: after signing out, Back must not
                    # show it again from the browser's cache (a shared or lab computer). An API
                    # answer likewise (a webhook's secret is shown once, a benchmark's key).
                    extra.append((b"cache-control", b"no-store"))
                message["headers"] = [*headers, *extra]
            await send(message)

        await self.app(scope, receive, with_headers)


def _is_private(headers: list[tuple[bytes, bytes]]) -> bool:
    """Whether the answer is a page or JSON (what a user's data is served as; static files
    are neither)."""
    return any(
        name.lower() == b"content-type" and value.startswith((b"text/html", b"application/json"))
        for name, value in headers
    )
