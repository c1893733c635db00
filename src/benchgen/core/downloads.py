"""The headers of a download that a browser saves rather than shows, for every door's files."""

from __future__ import annotations


def attachment_headers(filename: str) -> dict[str, str]:
    """Saved as `filename` (built from ids, never from user text, so nothing a user typed
    reaches the header); nosniff keeps a file from being read as a page."""
    return {
        "Content-Disposition": f'attachment; filename="{filename}"',
        "X-Content-Type-Options": "nosniff",
        # Answer keys and private runs: never kept by the browser or a shared proxy.
        "Cache-Control": "no-store",
    }
