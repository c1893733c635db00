"""A benchmark exported from the web app: JSONL, or an Inspect AI or lm-evaluation-harness task
folder, for its team (the API ignores the session cookie, so the pages link here)."""

from __future__ import annotations

from fastapi import APIRouter, Depends
from fastapi.responses import Response

from benchgen.services.benchmarks import exports
from benchgen.web.files import attachment
from benchgen.web.session import WebContext, csrf_checked

router = APIRouter(dependencies=[Depends(csrf_checked)], include_in_schema=False)


@router.get("/benchmarks/{benchmark_id}/export/{fmt}", name="benchmark_export")
def benchmark_export(ctx: WebContext, benchmark_id: str, fmt: str) -> Response:
    """The benchmark with its answer key as a download (owner and collaborators only)."""
    found = exports.export_benchmark(ctx, benchmark_id, fmt)
    return attachment(found.data, found.filename, found.media_type)
