"""The interactive API reference at /api/docs: Swagger UI served from this server."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response

from benchgen.web.templating import render

router = APIRouter(include_in_schema=False)


@router.get("/api/docs", name="api_reference")
def api_reference(request: Request) -> Response:
    """Every route of /api/v1 with its shapes, and "Try it out" with a token (no sign-in:
    the OpenAPI document is public too)."""
    return render(request, "api_reference.html", openapi_url=request.app.openapi_url)
