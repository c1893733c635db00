"""The scoring settings of a qa or mcq benchmark: the method future runs use and its
normalisation steps (past runs keep theirs until rescored)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response

from benchgen.core.context import Context
from benchgen.core.errors import InvalidInput
from benchgen.core.permissions import Action
from benchgen.services.benchmarks import lifecycle, scoring
from benchgen.services.runtime import undo_on_error
from benchgen.web.pages.benchmark_frame import FormDep, back_to, render_tab
from benchgen.web.pages.question_form import Problems, problems_of
from benchgen.web.session import WebContext, csrf_checked

router = APIRouter(dependencies=[Depends(csrf_checked)], include_in_schema=False)
SCORING = "benchmark_settings_scoring"
STEP_LABELS = {
    "nfkc": "Unicode NFKC (full-width and compatibility forms count as their plain letters)",
    "case": "Ignore case",
    "punctuation": "Ignore punctuation",
    "articles": "Ignore the articles a, an, the",
    "whitespace": "Collapse whitespace",
    "number_words": "Number words count as digits (four = 4)",
}


@router.get("/benchmarks/{benchmark_id}/settings/scoring", name=SCORING)
def scoring_page(request: Request, ctx: WebContext, benchmark_id: str) -> Response:
    """The method and its options, for the benchmark's editors."""
    return _page(request, ctx, benchmark_id, None, Problems())


@router.post("/benchmarks/{benchmark_id}/settings/scoring", name="benchmark_scoring_save")
def scoring_save(request: Request, ctx: WebContext, form: FormDep, benchmark_id: str) -> Response:
    """Save the chosen method; its boolean options come as checkboxes (unticked = off)."""
    method = str(form.get("method", ""))[:40]
    found = lifecycle.get_benchmark_for(ctx, benchmark_id, Action.BENCHMARK_EDIT)
    defaults = scoring.method_choices(found.format).get(method, {})
    options: dict[str, bool | float] = {}
    for name, default in defaults.items():
        if isinstance(default, bool):
            options[name] = form.get(f"{method}.{name}") == "on"
    settings: dict[str, Any] = {"method": method, "options": options}
    try:
        with undo_on_error(ctx):
            scoring.set_scoring(ctx, benchmark_id, settings)
    except InvalidInput as exc:
        return _page(request, ctx, benchmark_id, settings, problems_of(exc, {}), 422)
    return back_to(
        request, SCORING, "Scoring saved: future runs use it.", benchmark_id=benchmark_id
    )


def _page(
    request: Request,
    ctx: Context,
    benchmark_id: str,
    typed: dict[str, Any] | None,
    problems: Problems,
    status_code: int = 200,
) -> Response:
    found = lifecycle.get_benchmark_for(ctx, benchmark_id, Action.BENCHMARK_EDIT)
    current = typed or scoring.get_scoring(ctx, benchmark_id)
    return render_tab(
        request,
        "benchmarks/settings_scoring.html",
        found,
        "benchmark_settings",
        status_code,
        settings_tab=SCORING,
        methods=scoring.method_choices(found.format),
        scoring_now=current,
        labels=STEP_LABELS,
        problems=problems,
    )
