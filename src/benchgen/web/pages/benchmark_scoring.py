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
from benchgen.web.pages.question_form import Problems
from benchgen.web.session import WebContext, csrf_checked

router = APIRouter(dependencies=[Depends(csrf_checked)], include_in_schema=False)
SCORING = "benchmark_settings_scoring"
# The scoring registry's problem with one option: "options.tolerance: must be at least 0.0…".
STEP_LABELS = {
    "nfkc": "Unicode NFKC (full-width and compatibility forms count as their plain letters)",
    "case": "Ignore case",
    "punctuation": "Ignore punctuation",
    "articles": "Ignore the articles a, an, the",
    "whitespace": "Collapse whitespace",
    "number_words": "Number words count as digits (four = 4)",
    "tolerance": "Tolerance (an answer this far from the key, or nearer, is right)",
    "rel_tolerance": "Relative tolerance (a share of the key: 0.01 is 1 %)",
    "threshold": "Threshold (the word overlap, 0 to 1, from which an answer is right)",
}


@router.get("/benchmarks/{benchmark_id}/settings/scoring", name=SCORING)
def scoring_page(request: Request, ctx: WebContext, benchmark_id: str) -> Response:
    """The method and its options, for the benchmark's editors."""
    return _page(request, ctx, benchmark_id, None, Problems())


@router.post("/benchmarks/{benchmark_id}/settings/scoring", name="benchmark_scoring_save")
def scoring_save(request: Request, ctx: WebContext, form: FormDep, benchmark_id: str) -> Response:
    """Save the chosen method: its switches come as checkboxes (unticked = off), its numbers
    as fields (empty = the default)."""
    method = str(form.get("method", ""))[:40]
    found = lifecycle.get_benchmark_for(ctx, benchmark_id, Action.BENCHMARK_EDIT)
    defaults = scoring.method_choices(found.format).get(method, {})
    options: dict[str, Any] = {}
    for name, default in defaults.items():
        typed = form.get(f"{method}.{name}")
        if isinstance(default, bool):
            options[name] = typed == "on"
        else:
            options[name] = _number(typed) if isinstance(typed, str) and typed.strip() else default
    settings: dict[str, Any] = {"method": method, "options": options}
    try:
        with undo_on_error(ctx):
            scoring.set_scoring(ctx, benchmark_id, settings)
    except InvalidInput as exc:
        return _page(request, ctx, benchmark_id, settings, _by_field(exc, method), 422)
    return back_to(
        request, SCORING, "Scoring saved: future runs use it.", benchmark_id=benchmark_id
    )


def _by_field(exc: InvalidInput, method: str) -> Problems:
    """Each problem by the field it is about, named by its label ("Tolerance …: must be at
    least 0.0"), never by the service's path (`options.tolerance`)."""
    problems = Problems()
    for error in exc.errors or [{"msg": exc.message}]:
        said, loc = str(error.get("msg", "")), list(error.get("loc", []))
        if len(loc) == 3 and loc[:2] == ["scoring", "options"]:
            name = str(loc[2])
            problems.add(f"{method}.{name}", STEP_LABELS.get(name, name).split(" (")[0], said)
        else:
            problems.add("scoring", "Scoring", said)
    return problems


def _number(text: str) -> float | str:
    """A typed number, or the text as it was: the service then says what is wrong with it."""
    try:
        return float(text)
    except ValueError:
        return text.strip()[:40]


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
