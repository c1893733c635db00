"""Files through the API: uploads read within their limit, downloads sent as attachments."""

from __future__ import annotations

from collections.abc import Generator

from fastapi import Response, UploadFile
from fastapi.responses import StreamingResponse
from starlette.background import BackgroundTask

from benchgen.core.downloads import attachment_headers
from benchgen.core.errors import invalid


def read_upload(upload: UploadFile, field: str, limit: int) -> bytes:
    """The uploaded file's bytes; refused when empty or larger than `limit`. Read from the
    file the framework spooled it to, in the endpoint's own thread (never on the event loop).

    Raises:
        InvalidInput: empty, or larger than the limit (the body limit allows a little more for
            the multipart framing, so the file itself is measured here).
    """
    data = upload.file.read(limit + 1)
    if len(data) > limit:
        raise invalid([field], f"is larger than {limit} bytes")
    if not data:
        raise invalid([field], "is empty")
    return data


def attachment(data: bytes | str, filename: str, media_type: str) -> Response:
    """A download the browser saves rather than shows (file names are built from ids)."""
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
