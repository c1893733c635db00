"""Mounting the web app on the FastAPI app: pages, static files, headers, error pages."""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles

from benchgen.web.errors import page_for_error
from benchgen.web.headers import SecurityHeaders
from benchgen.web.pages import accounts, admin, benchmarks, chat, home, models, runs, settings
from benchgen.web.session import SignInRequired
from benchgen.web.templating import STATIC, build_templates

PAGES = (accounts, home, benchmarks, runs, models, settings, chat, admin)


def install(app: FastAPI) -> None:
    """Add every page router, the package's own static files and the security headers."""
    app.state.templates = build_templates()
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    for module in PAGES:
        app.include_router(module.router)
    app.add_exception_handler(SignInRequired, page_for_error)
    app.add_middleware(SecurityHeaders)
