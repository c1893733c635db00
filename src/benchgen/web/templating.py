"""Rendering pages: one Jinja2 environment (autoescaped), links from route names, flash notes."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

from fastapi import Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates
from jinja2 import Environment, FileSystemLoader, StrictUndefined
from starlette.datastructures import URL

from benchgen.core.text import plural
from benchgen.web.links import link_paths
from benchgen.web.session import csrf_token, current_session, remember, runtime_of

TEMPLATES = Path(__file__).parent / "templates"
STATIC = Path(__file__).parent / "static"
_FLASH_COOKIE = "bg_flash"


def build_templates() -> Jinja2Templates:
    """The environment every page renders with. Autoescaping is on for every template: all a
    user wrote (titles, questions, answers, chat) comes out as text, never as markup."""
    env = Environment(
        loader=FileSystemLoader(TEMPLATES),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=StrictUndefined,
    )
    env.filters["plural"] = plural
    return Jinja2Templates(env=env)


def path_for(request: Request, name: str, /, **params: Any) -> str:
    """The path of a named route (links are never pasted strings)."""
    return str(request.app.url_path_for(name, **{k: str(v) for k, v in params.items()}))


def render(
    request: Request,
    template: str,
    status_code: int = 200,
    *,
    keep_writes: bool = False,
    **values: Any,
) -> HTMLResponse:
    """A page in the common layout, with the signed-in user, CSRF token and any flash note.

    An error status marks the request refused: its unit of work is rolled back, unless
    `keep_writes` says the refusal itself must be kept (a failed password guess is counted).
    """
    if status_code >= 400 and not keep_writes:
        request.state.refused = True
    live = current_session(request)
    context = {
        "me": live.user if live else None,
        "csrf_token": csrf_token(request),
        "flash": unquote(request.cookies.get(_FLASH_COOKIE, "")),
        "path": lambda name, **params: path_for(request, name, **params),
        "static": lambda file: path_for(request, "static", path=file),
        "current": request.url.path,
        "link_paths": lambda text: link_paths(text, runtime_of(request).settings.public_url),
        **values,
    }
    templates: Jinja2Templates = request.app.state.templates
    response = templates.TemplateResponse(request, template, context, status_code=status_code)
    if context["flash"]:
        response.delete_cookie(_FLASH_COOKIE, path="/")
    remember(request, response)
    return response


def no_referrer(response: Response) -> Response:
    """Keep a page's address from every request it leads to: the site's same-origin policy
    would still send it, secret and all, with each link followed, form sent, stylesheet or
    script fetched (into the server's and any proxy's or cache's logs). For pages whose
    address is a secret (an invitation, a password reset, a verification link); a redirect's
    own policy governs the request it leads to."""
    response.headers["referrer-policy"] = "no-referrer"
    return response


def redirect(request: Request, name: str, flash: str = "", **params: Any) -> Response:
    """Post/redirect/get: send the browser to a named page, with a one-time note to show."""
    return redirect_to(request, path_for(request, name, **params), flash)


def redirect_to(request: Request, target: str | URL, flash: str = "") -> Response:
    """A 303 to a path already checked to be local, with an optional one-time note (Secure
    over https, like every cookie of ours: it may name an account or a benchmark)."""
    response = RedirectResponse(str(target), status_code=303)
    if flash:
        # Quoted: a cookie value cannot hold every character a title may have.
        response.set_cookie(
            _FLASH_COOKIE,
            quote(flash[:300]),
            httponly=True,
            samesite="lax",
            secure=request.url.scheme == "https",
            path="/",
        )
    return response
