"""Composition of the web server: `create_app(settings)` builds everything, nothing at import."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from benchgen import __version__
from benchgen.api import account, benchmarks, errors, models, runs
from benchgen.core.config import Settings
from benchgen.jobs.worker import start_workers, stop_workers
from benchgen.services.runtime import Runtime, build_runtime


def create_app(settings: Settings | None = None, runtime: Runtime | None = None) -> FastAPI:
    """A FastAPI app serving the API; uses `runtime` when given (tests), else builds one."""
    settings = settings or Settings()
    owned = runtime is None
    active = runtime or build_runtime(settings)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        # The embedded worker pool: one machine needs no separate worker process or broker.
        workers = start_workers(active, active.settings.worker_threads)
        try:
            yield
        finally:
            stop_workers(workers)
            if owned:
                active.close()

    app = FastAPI(
        title="BenchGen API",
        version=__version__,
        description="Build benchmarks, run models on them, rank results. "
        "Authenticate with a personal API token: `Authorization: Bearer bgp_…`.",
        openapi_url="/api/v1/openapi.json",
        docs_url="/api/docs",
        redoc_url=None,
        lifespan=lifespan,
    )
    app.state.runtime = active
    errors.install(app)
    for module in (account, benchmarks, runs, models):
        app.include_router(module.router)

    @app.get("/healthz", tags=["ops"])
    def healthz() -> dict[str, str]:
        """Liveness: the process answers and its database is reachable."""
        return {"status": "ok", "database": active.database.ping()}

    return app
