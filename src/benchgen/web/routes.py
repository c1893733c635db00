"""Mounting the web app on the FastAPI app: pages, static files, headers, error pages."""

from __future__ import annotations

from fastapi import Depends, FastAPI
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

from benchgen.web.errors import page_for_error
from benchgen.web.headers import SecurityHeaders
from benchgen.web.pages import (
    accounts,
    admin,
    admin_review,
    api_reference,
    benchmark_access,
    benchmark_bundle,
    benchmark_email,
    benchmark_evaluate,
    benchmark_export,
    benchmark_questions,
    benchmark_scoring,
    benchmark_settings,
    benchmark_setup,
    benchmark_tabs,
    benchmarks,
    chat,
    collaborator_invitations,
    datasets,
    downloads,
    home,
    invites,
    models,
    notifications,
    passwords,
    run_compare,
    runs,
    settings,
    training,
    training_job,
)
from benchgen.web.session import SignInRequired, storable_input
from benchgen.web.templating import STATIC, build_templates

PAGES = (
    accounts,
    passwords,
    invites,
    collaborator_invitations,
    home,
    benchmarks,  # before the benchmark pages: /benchmarks/new is not a benchmark's id
    benchmark_bundle,  # before them too: /benchmarks/upload is not a benchmark's id either
    benchmark_tabs,
    downloads,
    benchmark_export,
    benchmark_questions,
    benchmark_evaluate,
    benchmark_settings,
    benchmark_scoring,
    benchmark_access,
    benchmark_setup,
    benchmark_email,
    run_compare,  # before the run pages: /runs/compare is not a run's id
    runs,
    models,
    datasets,
    training,  # before the job pages: /training/plan and /training/launch are not job ids
    training_job,
    settings,
    notifications,
    chat,
    admin,
    admin_review,
    api_reference,
)


def favicon() -> FileResponse:
    """The site's icon where browsers and tools look for it without a page's <link rel=icon>
    (the API docs, a JSON response, bookmarks): otherwise every such visit logs a 404."""
    return FileResponse(
        STATIC / "favicon.svg",
        media_type="image/svg+xml",
        headers={"Cache-Control": "public, max-age=86400"},
    )


def install(app: FastAPI) -> None:
    """Add every page router, the package's own static files and icon, and the security
    headers."""
    app.state.templates = build_templates()
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    app.add_api_route("/favicon.ico", favicon, methods=["GET"], include_in_schema=False)
    for module in PAGES:
        app.include_router(module.router, dependencies=[Depends(storable_input)])
    app.add_exception_handler(SignInRequired, page_for_error)
    app.add_middleware(SecurityHeaders)
