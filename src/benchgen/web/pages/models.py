"""Model pages: the catalogue by source, endpoint models, key rotation, deletion."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response

from benchgen.services import models
from benchgen.web.session import WebContext, csrf_checked
from benchgen.web.templating import render

router = APIRouter(dependencies=[Depends(csrf_checked)], include_in_schema=False)


@router.get("/models", name="models")
def model_list(request: Request, ctx: WebContext) -> Response:
    """The catalogue."""
    return render(request, "models/list.html", models=models.list_models(ctx))
