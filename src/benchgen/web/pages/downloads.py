"""File downloads in the web app: a benchmark's leaderboard as CSV or JSON."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query
from fastapi.responses import Response

from benchgen.services.runs import exports
from benchgen.web.files import attachment
from benchgen.web.session import WebContext, csrf_checked

router = APIRouter(dependencies=[Depends(csrf_checked)], include_in_schema=False)


@router.get("/benchmarks/{benchmark_id}/leaderboard/download/{fmt}", name="leaderboard_download")
def leaderboard_download(
    ctx: WebContext,
    benchmark_id: str,
    fmt: str,
    phase: Annotated[str | None, Query(max_length=64)] = None,
) -> Response:
    """The phase's leaderboard as the leaderboard tab shows it, as CSV or JSON."""
    media, text = exports.export_leaderboard(ctx, benchmark_id, fmt, phase or None)
    return attachment(text, f"{benchmark_id}-leaderboard.{fmt}", media)
