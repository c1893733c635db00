"""Downloads from web pages: sent as attachments, never rendered by the browser."""

from __future__ import annotations

from collections.abc import Generator

from starlette.background import BackgroundTask
from starlette.responses import Response, StreamingResponse


def attachment(data: bytes | str, filename: str, media_type: str) -> Response:
    """A download the browser saves. File names are built from ids, never from user text, so
    nothing a user typed reaches the header; nosniff keeps a file from being read as a page."""
    return Response(data, media_type=media_type, headers=_saved_as(filename))


def streamed_attachment(
    chunks: Generator[str, None, None], filename: str, media_type: str
) -> StreamingResponse:
    """`attachment` for a file sent a piece at a time, never held whole; `chunks` is closed as
    soon as the response has ended or the client has left, not when the garbage collector
    finds it."""
    return StreamingResponse(
        chunks,
        media_type=media_type,
        headers=_saved_as(filename),
        background=BackgroundTask(chunks.close),
    )


def _saved_as(filename: str) -> dict[str, str]:
    return {
        "Content-Disposition": f'attachment; filename="{filename}"',
        "X-Content-Type-Options": "nosniff",
        # Answer keys and private runs: never kept by the browser or a shared proxy.
        "Cache-Control": "no-store",
    }
