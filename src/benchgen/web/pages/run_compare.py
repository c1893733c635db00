"""The compare page: pick two finished runs of one benchmark, then see run B against run A
(for the benchmark's team: pairs of runs are per-question data)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import Response

from benchgen.core.context import Context
from benchgen.core.errors import InvalidInput
from benchgen.services.runs import compare, launch
from benchgen.services.runs.compare import CATEGORIES, Comparison, PairedItem
from benchgen.web.charts import chart_label
from benchgen.web.session import WebContext, csrf_checked
from benchgen.web.templating import render

# Included before the run pages: /runs/compare is not a run's id.
router = APIRouter(dependencies=[Depends(csrf_checked)], include_in_schema=False)
PAGE_SIZE = 50
CHOICES = 200  # runs offered in each picker, newest first
SHOW_LABELS = {
    "all": "All questions",
    "only_a": "Only A right",
    "only_b": "Only B right",
    "both_right": "Both right",
    "both_wrong": "Both wrong",
}
RunId = Annotated[str, Query(max_length=64)]


@dataclass(frozen=True)
class Filters:
    """Which paired questions the table shows."""

    show: str = "all"
    page: int = 1


@router.get("/runs/compare", name="run_compare")
def compare_page(
    request: Request,
    ctx: WebContext,
    a: RunId = "",
    b: RunId = "",
    show: Annotated[str, Query(max_length=20)] = "all",
    page: Annotated[int, Query(ge=1, le=10_000)] = 1,
) -> Response:
    """Two runs side by side; with one or none chosen, the form to choose them."""
    values: dict[str, Any] = {
        "a": a,
        "b": b,
        "choices": _choices(ctx, a),
        "comparison": None,
        "problems": [],
        "filters": Filters(show if show in SHOW_LABELS else "all", page),
        "show_labels": SHOW_LABELS,
    }
    if not (a and b):
        return render(request, "runs/compare.html", **values)
    try:
        found = compare.compare_runs(ctx, a, b)
    except InvalidInput as exc:
        values["problems"] = [_problem(error) for error in exc.errors] or [exc.message]
        return render(request, "runs/compare.html", status_code=422, **values)
    # A score corrected by hand is official on the run page and the leaderboard; the figures
    # here are computed from the answers, so the page says which run they may differ for.
    edited = [name for name, was in (("A", found.edited_a), ("B", found.edited_b)) if was]
    values.update(
        comparison=found,
        chart=accuracy_chart(found),
        edited=edited,
        **_table(found, values["filters"]),
    )
    return render(request, "runs/compare.html", **values)


def _problem(error: dict[str, Any]) -> str:
    """An error's message, saying which run it is about ("the run is running": A or B?)."""
    message = str(error.get("msg", ""))
    loc = error.get("loc") or [""]
    return f"Run {loc[-1].upper()}: {message}" if loc[-1] in ("a", "b") else message


def _choices(ctx: Context, a: str) -> list[launch.RunView]:
    """Finished runs to pick from: of run A's benchmark once A is chosen, else any."""
    benchmark_id = launch.get_run(ctx, a).benchmark_id if a else None
    # Finished ones only, picked by the query: filtered after it, runs still going or failed
    # took the page's places, and the picker came up short.
    found = launch.list_runs(ctx, benchmark_id, limit=CHOICES, statuses=compare.COMPARABLE)
    return [run for run in found if run.model_id and run.detail_visible]


def _table(found: Comparison, filters: Filters) -> dict[str, Any]:
    items: list[PairedItem] = found.items
    shown = [item for item in items if filters.show in ("all", item.category)]
    offset = (filters.page - 1) * PAGE_SIZE
    counts = {category: sum(item.category == category for item in items) for category in CATEGORIES}
    return {
        "rows": shown[offset : offset + PAGE_SIZE],
        "total": len(shown),
        "has_next": offset + PAGE_SIZE < len(shown),
        "counts": counts,
    }


def accuracy_chart(found: Comparison) -> dict[str, Any]:
    """A Chart.js bar chart of the two runs' accuracies on the questions both answered."""
    return {
        "type": "bar",
        "data": {
            "labels": [chart_label(f"A: {found.model_a}"), chart_label(f"B: {found.model_b}")],
            "datasets": [
                {
                    "label": "Accuracy (%)",
                    "data": [round(found.accuracy_a * 100, 1), round(found.accuracy_b * 100, 1)],
                    "backgroundColor": ["#8a8f98", "#2f5fb3"],
                }
            ],
        },
        "options": {
            "maintainAspectRatio": False,
            "indexAxis": "y",
            "scales": {"x": {"min": 0, "max": 100, "title": {"display": True, "text": "%"}}},
        },
    }
