"""The frame every page of one benchmark renders in: its title, its tabs, its settings tabs."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, Request
from fastapi.responses import HTMLResponse, Response
from starlette.datastructures import FormData

from benchgen.services.benchmarks.lifecycle import BenchmarkView
from benchgen.web.templating import path_for, redirect_to, render

_EDITORS = frozenset({"owner", "collaborator"})


async def form_of(request: Request) -> FormData:
    """The request's form, read once (the CSRF check has usually read it already)."""
    return await request.form()


FormDep = Annotated[FormData, Depends(form_of)]


def is_editor(benchmark: BenchmarkView) -> bool:
    """Whether to offer editing (the services decide again when it is asked for)."""
    return bool(_EDITORS & set(benchmark.roles))


def is_owner(benchmark: BenchmarkView) -> bool:
    """Whether to offer the owner's own settings (the services decide again)."""
    return "owner" in benchmark.roles


def render_tab(
    request: Request,
    template: str,
    benchmark: BenchmarkView,
    tab: str,
    status_code: int = 200,
    **values: Any,
) -> HTMLResponse:
    """A page of one benchmark, with its tab bar showing `tab` (a route name) as current."""
    return render(
        request,
        template,
        status_code,
        benchmark=benchmark,
        tab=tab,
        editor=is_editor(benchmark),
        owner=is_owner(benchmark),
        **values,
    )


def back_to(request: Request, name: str, flash: str, query: str = "", **params: Any) -> Response:
    """Post/redirect/get to a named page with an optional query string (e.g. a page number)."""
    target = path_for(request, name, **params)
    return redirect_to(request, f"{target}?{query}" if query else target, flash)
