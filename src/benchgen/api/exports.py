"""`/api/v1/benchmarks/import/file` and `/api/v1/benchmarks/{id}/export`: files in and out."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, File, Form, Query, Request, Response, UploadFile

from benchgen.api.benchmarks import CREATION, created_reply, quota_headers
from benchgen.api.deps import ContextDep
from benchgen.api.errors import COMMON
from benchgen.api.files import attachment, read_upload
from benchgen.api.json_bodies import field_json
from benchgen.api.routing import OneThreadRoute
from benchgen.api.schemas import CreatedBenchmark
from benchgen.services.benchmarks import exports, file_rows, imports

router = APIRouter(
    prefix="/api/v1/benchmarks", tags=["benchmarks"], responses=COMMON, route_class=OneThreadRoute
)
# An uploaded file of questions: the body limit allows it what the JSON import allows.
IMPORT_FILE_PATH = f"{router.prefix}/import/file"
FILES: dict[int | str, dict[str, Any]] = {
    200: {
        "content": {"application/zip": {}, "application/x-ndjson": {}},
        "description": "JSON lines, or a zipped task folder",
    }
}


@router.post(
    "/import/file",
    status_code=201,
    response_model=CreatedBenchmark,
    responses=CREATION,
    openapi_extra={"x-scope": "create"},
)
def import_file(
    ctx: ContextDep,
    request: Request,
    response: Response,
    file: Annotated[UploadFile, File(description="JSONL, CSV, Parquet or a datasets file")],
    title: Annotated[str, Form(max_length=200)],
    description: Annotated[str, Form(max_length=5000)] = "",
    format: Annotated[Literal["", "qa", "mcq"], Form(description="Unset: from the rows")] = "",
    file_format: Annotated[file_rows.FileFormat, Form()] = "auto",
    preset: Annotated[Literal["none", "inspect", "lm_eval_mcq"], Form()] = "none",
    mapping: Annotated[
        str, Form(max_length=10_000, description='JSON, e.g. {"prompt": "question"}')
    ] = "{}",
) -> dict[str, Any]:
    """Create a benchmark from an uploaded file through a field mapping (counts against the
    creation limit). Every row's problem comes back with its line or row number."""
    data = read_upload(file, "file", ctx.settings.max_import_bytes)
    fields = field_json(mapping, "mapping")
    spec = {
        "title": title,
        "description": description,
        "format": format or None,
        "file_format": file_format,
        "preset": preset,
        "mapping": fields,
    }
    created = imports.import_file(ctx, data, file.filename or "upload", spec)
    quota_headers(ctx, response)
    return created_reply(request, created)


@router.get(
    "/{benchmark_id}/export",
    response_class=Response,
    responses=FILES,
    openapi_extra={"x-scope": "read"},
)
def export_benchmark(
    ctx: ContextDep,
    benchmark_id: str,
    format: Annotated[exports.ExportFormat, Query()] = "jsonl",
) -> Response:
    """The benchmark with its answer key (owner and collaborators only): JSON lines, or an
    Inspect AI or lm-evaluation-harness task folder (zip) that runs it unchanged."""
    found = exports.export_benchmark(ctx, benchmark_id, format)
    return attachment(found.data, found.filename, found.media_type)
