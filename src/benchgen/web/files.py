"""Downloads from web pages: sent as attachments, never rendered by the browser."""

from __future__ import annotations

from starlette.responses import Response


def attachment(data: bytes | str, filename: str, media_type: str) -> Response:
    """A download the browser saves. File names are built from ids, never from user text, so
    nothing a user typed reaches the header; nosniff keeps a file from being read as a page."""
    return Response(
        data,
        media_type=media_type,
        headers={
            "Content-Disposition": f'attachment; filename="{filename}"',
            "X-Content-Type-Options": "nosniff",
            # Answer keys and private runs: never kept by the browser or a shared proxy.
            "Cache-Control": "no-store",
        },
    )
