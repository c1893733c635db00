"""`/api/v1/benchmarks/…` for custom formats: upload a Codabench bundle, new versions, download,
submissions; `/api/v1/runs/{id}/program-output` for the team."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, File, Form, Query, Request, Response, UploadFile

from benchgen.api.benchmarks import CREATION, created_reply, quota_headers
from benchgen.api.deps import ContextDep, WorkDep
from benchgen.api.errors import COMMON, responses
from benchgen.api.files import attachment, read_upload
from benchgen.api.routing import OneThreadRoute
from benchgen.api.schemas import CreatedBenchmark
from benchgen.services.benchmarks import bundles
from benchgen.services.benchmarks.bundles import BundleView
from benchgen.services.runs import bundle_execution, submissions
from benchgen.services.runs.launch import RunView

router = APIRouter(
    prefix="/api/v1", tags=["custom formats"], responses=COMMON, route_class=OneThreadRoute
)
# Bundles and submissions are whole archives: the body limit allows them more.
UPLOAD_PATH = f"{router.prefix}/benchmarks/bundles"
VERSION_PATH = f"{router.prefix}/benchmarks/{{benchmark_id}}/bundle"
SUBMISSION_PATH = f"{router.prefix}/benchmarks/{{benchmark_id}}/submissions"
MAX_INDEX = 2**31 - 1  # versions and phase indexes are 32-bit integers in the database
ZIP: dict[int | str, dict[str, Any]] = {
    200: {"content": {"application/zip": {}}, "description": "The bundle as uploaded"}
}


@router.post(
    "/benchmarks/bundles",
    status_code=201,
    response_model=CreatedBenchmark,
    responses=CREATION,
    openapi_extra={"x-scope": "create"},
)
def upload_bundle(
    work: WorkDep,
    request: Request,
    response: Response,
    bundle: Annotated[UploadFile, File(description="A Codabench v2 bundle (.zip)")],
) -> dict[str, Any]:
    """Create a custom benchmark from a Codabench v2 bundle. Every problem comes back at once,
    each with its place and line in competition.yaml; unknown keys are `warnings`."""
    # Three steps, so that the bundle's programs run while no transaction is open: on SQLite a
    # write transaction would block every other write on the server for as long as they run.
    name = bundle.filename or "bundle.zip"
    with work.reading() as ctx:
        data = read_upload(bundle, "bundle", ctx.settings.max_bundle_bytes)
        pending = bundles.check_bundle(ctx, data, name)
    checked = pending.inspect()
    with work.opened() as ctx:
        created = bundles.upload_bundle(ctx, data, name, checked)
        quota_headers(ctx, response)
    return created_reply(request, created)


@router.get(
    "/benchmarks/{benchmark_id}/bundle",
    response_model=BundleView,
    openapi_extra={"x-scope": "read"},
)
def get_bundle(ctx: ContextDep, benchmark_id: str) -> BundleView:
    """The current bundle: pages, phases and columns; solutions and versions for the team."""
    return bundles.get_bundle(ctx, benchmark_id)


@router.post(
    "/benchmarks/{benchmark_id}/bundle",
    response_model=BundleView,
    responses=responses(409),
    openapi_extra={"x-scope": "edit"},
)
def upload_bundle_version(
    work: WorkDep,
    benchmark_id: str,
    bundle: Annotated[UploadFile, File(description="The changed bundle (.zip)")],
) -> BundleView:
    """Upload a changed bundle as the next version. Adding or removing phases or tasks is
    refused here (403): that is done in the web app."""
    # Checked, inspected with no transaction open, then stored: as `upload_bundle`.
    name = bundle.filename or "bundle.zip"
    with work.reading() as ctx:
        data = read_upload(bundle, "bundle", ctx.settings.max_bundle_bytes)
        pending = bundles.check_bundle(ctx, data, name, benchmark_id)
    checked = pending.inspect()
    with work.opened() as ctx:
        return bundles.upload_bundle_version(ctx, benchmark_id, data, name, checked)


@router.get(
    "/benchmarks/{benchmark_id}/bundle/download",
    response_class=Response,
    responses=ZIP,
    openapi_extra={"x-scope": "read"},
)
def download_bundle(
    ctx: ContextDep,
    benchmark_id: str,
    version: Annotated[int | None, Query(ge=1, le=MAX_INDEX)] = None,
) -> Response:
    """The bundle zip exactly as uploaded (owner and collaborators only)."""
    found = bundles.download_bundle(ctx, benchmark_id, version)
    return attachment(found.data, found.filename, "application/zip")


@router.post(
    "/benchmarks/{benchmark_id}/submissions",
    status_code=202,
    response_model=RunView,
    responses=responses(409, 429),
    openapi_extra={"x-scope": "runs"},
)
def submit(
    ctx: ContextDep,
    benchmark_id: str,
    submission: Annotated[UploadFile, File(description="A results zip or a code zip")],
    phase: Annotated[
        int | None,
        Form(
            ge=0,
            le=MAX_INDEX,
            description="The phase's number: 0 for the first in the bundle's order of phase "
            "indexes, 1 for the next (default: the first phase open now)",
        ),
    ] = None,
    kind: Annotated[str, Form(description="auto, results or code")] = "auto",
) -> RunView:
    """Submit to a custom benchmark as Codabench participants do; it becomes a run."""
    data = read_upload(submission, "submission", ctx.settings.max_submission_bytes)
    name = submission.filename or "submission.zip"
    return submissions.submit(ctx, benchmark_id, data, name, phase, kind)


@router.get(
    "/runs/{run_id}/program-output",
    response_model=dict[str, str],
    openapi_extra={"x-scope": "read"},
)
def program_output(ctx: ContextDep, run_id: str) -> dict[str, str]:
    """The bundle programs' output per task (the benchmark's owner and collaborators only)."""
    return bundle_execution.program_output(ctx, run_id)
