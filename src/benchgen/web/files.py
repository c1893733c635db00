"""Downloads from web pages: sent as attachments, never rendered by the browser."""

from __future__ import annotations

from collections.abc import Generator

from starlette.background import BackgroundTask
from starlette.responses import Response, StreamingResponse

from benchgen.core.downloads import attachment_headers


def attachment(data: bytes | str, filename: str, media_type: str) -> Response:
    """A download the browser saves (`attachment_headers`)."""
    return Response(data, media_type=media_type, headers=attachment_headers(filename))


def streamed_attachment(
    chunks: Generator[str, None, None], filename: str, media_type: str
) -> StreamingResponse:
    """`attachment` for a file sent a piece at a time, never held whole; `chunks` is closed as
    soon as the response has ended or the client has left, not when the garbage collector
    finds it."""
    return StreamingResponse(
        chunks,
        media_type=media_type,
        headers=attachment_headers(filename),
        background=BackgroundTask(chunks.close),
    )
