"""A secret carried from the form that made it to the page it redirects to, shown there once."""

from __future__ import annotations

from fastapi import Request
from fastapi.responses import Response

# Long enough to follow the redirect; the page that reads it deletes it at once.
_LIFETIME_S = 300


def hand_over(
    request: Request, response: Response, cookie: str, path: str, secret: str
) -> Response:
    """Send `secret` with the redirect `response` in a cookie only the page at `path` receives:
    a reload of that page never re-sends the form, and the secret is never in an address."""
    response.set_cookie(
        cookie,
        secret,
        max_age=_LIFETIME_S,
        path=path,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )
    return response


def handed(request: Request, cookie: str) -> str:
    """The secret handed over to this page, if any (check it before showing it)."""
    return request.cookies.get(cookie, "")


def received(
    request: Request, response: Response, cookie: str, path: str, *, shown: bool
) -> Response:
    """Delete the cookie that `handed` read, so its secret shows once; a page that shows it is
    never kept by the browser or a proxy."""
    if cookie in request.cookies:
        response.delete_cookie(cookie, path=path)
    if shown:
        response.headers["cache-control"] = "no-store"
    return response
