"""Administration (admins only): users, credits, sign-up mode, agent switches, reports, audit."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response

from benchgen.services import deployment
from benchgen.web.session import WebContext, csrf_checked
from benchgen.web.templating import render

router = APIRouter(dependencies=[Depends(csrf_checked)], include_in_schema=False)


@router.get("/admin", name="admin")
def admin_home(request: Request, ctx: WebContext) -> Response:
    """The admin overview."""
    return render(request, "admin/home.html", settings=deployment.list_settings(ctx))
