"""Composition of the web server: `create_app(settings)` builds everything, nothing at import."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from benchgen import __version__
from benchgen.agent.brains import Brain, configured_brain
from benchgen.agent.runner import TurnRunner
from benchgen.api import (
    account,
    benchmarks,
    bundles,
    chat,
    compare,
    datasets,
    downloads,
    errors,
    exports,
    metrics,
    models,
    notifications,
    runs,
    scoring,
    training,
)
from benchgen.api.head import HeadAsGet
from benchgen.api.limits import BodyLimit
from benchgen.api.slashes import NoTrailingSlash
from benchgen.core.config import Settings
from benchgen.jobs.dispatching import dispatching
from benchgen.jobs.worker import start_workers, stop_workers
from benchgen.services.runtime import Runtime, build_runtime
from benchgen.web import errors as web_errors
from benchgen.web import routes as web_routes
from benchgen.web.pages import benchmark_bundle as web_bundle
from benchgen.web.pages import benchmark_evaluate as web_evaluate
from benchgen.web.pages import benchmarks as web_benchmarks
from benchgen.web.pages import datasets as web_datasets

# Multipart framing around an uploaded archive (boundaries, part headers, small fields).
UPLOAD_SLACK = 64 * 1024


def create_app(
    settings: Settings | None = None, runtime: Runtime | None = None, brain: Brain | None = None
) -> FastAPI:
    """A FastAPI app serving the API and the web app; uses `runtime` and `brain` when given
    (tests), else builds them from the settings.

    Raises:
        BrainUnavailable: the agent's brain cannot be built (BENCHGEN_AGENT_MODEL).
    """
    settings = settings or Settings()
    # The brain first: a wrong setting stops the server before it opens anything.
    chosen = brain or configured_brain(settings)
    owned = runtime is None
    active = runtime or build_runtime(settings)
    turns = TurnRunner(active, chosen, settings.agent_threads)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        # The embedded worker pool: one machine needs no separate worker process or broker.
        # With a broker, `benchgen worker` processes take the jobs this process publishes.
        threads = 0 if active.settings.broker_url else active.settings.worker_threads
        with dispatching(active.settings):
            workers = start_workers(active, threads)
            try:
                yield
            finally:
                turns.close()  # running turns are recorded before the database closes
                stop_workers(workers)
                if owned:
                    active.close()

    app = FastAPI(
        title="BenchGen API",
        version=__version__,
        description="Build benchmarks, run models on them, rank results. "
        "Authenticate with a personal API token: `Authorization: Bearer bgp_…`.",
        openapi_url="/api/v1/openapi.json",
        docs_url=None,  # web/pages/api_reference.py serves it without a CDN
        redoc_url=None,
        lifespan=lifespan,
    )
    app.state.runtime = active
    app.state.turn_runner = turns
    errors.install(app, pages=web_errors.page_for_error)
    # Outside the routes and authentication: an oversized body is refused before it is parsed.
    app.add_middleware(
        BodyLimit,
        default=active.settings.max_body_bytes,
        by_path={
            benchmarks.IMPORT_PATH: active.settings.max_import_bytes,
            exports.IMPORT_FILE_PATH: active.settings.max_import_bytes + UPLOAD_SLACK,
            web_benchmarks.IMPORT_PAGE: active.settings.max_import_bytes,
            bundles.UPLOAD_PATH: active.settings.max_bundle_bytes + UPLOAD_SLACK,
            bundles.VERSION_PATH: active.settings.max_bundle_bytes + UPLOAD_SLACK,
            bundles.SUBMISSION_PATH: active.settings.max_submission_bytes + UPLOAD_SLACK,
            web_bundle.UPLOAD_PAGE: active.settings.max_bundle_bytes + UPLOAD_SLACK,
            web_bundle.VERSION_PAGE: active.settings.max_bundle_bytes + UPLOAD_SLACK,
            web_evaluate.SUBMIT_PAGE: active.settings.max_submission_bytes + UPLOAD_SLACK,
            datasets.UPLOAD_PATH: active.settings.max_dataset_bytes + UPLOAD_SLACK,
            web_datasets.UPLOAD_PAGE: active.settings.max_dataset_bytes + UPLOAD_SLACK,
        },
    )
    app.add_middleware(NoTrailingSlash)
    app.add_middleware(HeadAsGet)  # outside the API's layers: each sees the GET a HEAD mirrors
    for module in (
        account,
        notifications,
        downloads,
        bundles,
        compare,
        scoring,
        exports,
        benchmarks,
        runs,
        models,
        datasets,
        training,
        chat,
        metrics,
    ):
        app.include_router(module.router)
    web_routes.install(app)

    @app.get("/healthz", tags=["ops"])
    def healthz() -> dict[str, str]:
        """Liveness: the process answers and its database is reachable."""
        return {"status": "ok", "database": active.database.ping()}

    return app
