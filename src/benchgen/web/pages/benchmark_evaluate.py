"""The Evaluate tab: pick a model, see what the run may cost, start it; on a custom benchmark,
also submit a results or code zip to one of its phases."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Form, Query, Request
from fastapi.responses import Response

from benchgen.core.context import Context
from benchgen.core.errors import (
    BenchGenError,
    Conflict,
    InsufficientCredits,
    InvalidInput,
    NotFound,
    PermissionDenied,
    RateLimited,
)
from benchgen.services import models
from benchgen.services.accounts import credits, ratelimits
from benchgen.services.benchmarks import lifecycle, members, phases
from benchgen.services.benchmarks.lifecycle import BenchmarkView
from benchgen.services.runs import launch, submissions
from benchgen.services.runs.launch import Estimate
from benchgen.services.runtime import undo_on_error
from benchgen.web import places
from benchgen.web.pages.benchmark_bundle import read_upload
from benchgen.web.pages.benchmark_frame import FormDep, render_tab
from benchgen.web.pages.question_form import Problems, text_of
from benchgen.web.session import WebContext, csrf_checked
from benchgen.web.templating import redirect

router = APIRouter(dependencies=[Depends(csrf_checked)], include_in_schema=False)
# Where a model comes from, in the order the picker shows them.
SOURCES = (("platform", "Platform models"), ("you", "My models"))
# What can stop a run that the person can fix here: another model, more credits, waiting.
_REFUSALS = (InvalidInput, Conflict, RateLimited, InsufficientCredits, NotFound)
IdQuery = Annotated[str, Query(max_length=64)]
# The body limit lets this page take a whole submission (app.py names it).
SUBMIT_PAGE = "/benchmarks/{benchmark_id}/submissions"
KINDS = (
    ("auto", "Decide from the zip (code when it holds .py files and a task ingests code)"),
    ("results", "Results (predictions the scoring program reads)"),
    ("code", "Code (run by the bundle's ingestion program)"),
)
# The Advanced section: generation settings passed to the service as typed, then the rest.
SETTING_FIELDS = (
    "temperature",
    "top_p",
    "max_tokens",
    "system_prompt",
    "few_shot",
    "chain_of_thought",
    "seed",
    "samples",
)
ADVANCED = (
    *SETTING_FIELDS,
    "stop",
    "subset_kind",
    "subset_n",
    "subset_seed",
    "subset_tags",
    "cache",
    "max_credits",
)
# The service's places of a subset's parts, as the Advanced section names their fields.
SUBSET_FIELDS = {
    "kind": "subset_kind",
    "n": "subset_n",
    "seed": "subset_seed",
    "tags": "subset_tags",
}
MAX_FIELD_CHARS = 5000  # above every setting's own limit: the service says what is too long
# A phase's position has at most this many digits; the service says which positions exist.
MAX_PHASE_DIGITS = len(str(submissions.MAX_PHASE_INDEX))
# What can stop a submission that the person can fix here: a closed phase, a used-up limit.
_SUBMIT_REFUSALS = (InvalidInput, Conflict, RateLimited, NotFound, PermissionDenied)


@dataclass(frozen=True)
class Submission:
    """The submission form as sent: the phase's position and the kind of zip."""

    phase: str = ""
    kind: str = "auto"


@router.get("/benchmarks/{benchmark_id}/evaluate", name="benchmark_evaluate")
def evaluate(
    request: Request, ctx: WebContext, benchmark_id: str, model_id: IdQuery = ""
) -> Response:
    """The model picker with its Advanced settings; with a model chosen, the estimate for
    those settings and the start button."""
    advanced = advanced_fields(request.query_params)
    return _page(request, ctx, benchmark_id, model_id, advanced=advanced)


@router.post("/benchmarks/{benchmark_id}/evaluate", name="benchmark_evaluate_start")
def evaluate_start(
    request: Request,
    ctx: WebContext,
    benchmark_id: str,
    form: FormDep,
    model_id: Annotated[str, Form(max_length=64)],
    phase_id: Annotated[str, Form(max_length=64)] = "",
) -> Response:
    """Start the run (credits reserved, questions frozen) and go to its page."""
    advanced = advanced_fields(form)
    try:
        with undo_on_error(ctx):
            options = run_options(advanced)
            run = launch.start_run(ctx, benchmark_id, model_id, phase_id or None, options)
    except _REFUSALS as exc:
        return _page(request, ctx, benchmark_id, model_id, exc, exc.http_status, advanced=advanced)
    return redirect(request, "run", flash="Run queued.", run_id=run.id)


def advanced_fields(source: Mapping[str, Any]) -> dict[str, str]:
    """The Advanced section's fields that were filled in, as sent (to refill the form)."""
    values = {name: source.get(name) for name in ADVANCED}
    return {
        name: value.strip()[:MAX_FIELD_CHARS]
        for name, value in values.items()
        if isinstance(value, str) and value.strip()
    }


def run_options(fields: dict[str, str]) -> dict[str, Any]:
    """The run's options from the Advanced fields; the service validates every value (a
    number that is not one is refused there with its field's name)."""
    settings: dict[str, Any] = {name: fields[name] for name in SETTING_FIELDS if name in fields}
    if "stop" in fields:
        settings["stop"] = [line for line in fields["stop"].splitlines() if line]
    options: dict[str, Any] = {"settings": settings, "cache": fields.get("cache") == "on"}
    kind = fields.get("subset_kind", "")
    if kind:
        options["subset"] = {
            "kind": kind,
            "n": fields.get("subset_n") or None,
            "seed": fields.get("subset_seed") or 0,
            "tags": [t.strip() for t in fields.get("subset_tags", "").split(",") if t.strip()],
        }
    if "max_credits" in fields:
        options["max_credits"] = fields["max_credits"]
    return options


def said_by_field(refusal: BenchGenError, problems: Problems) -> str:
    """The refusal in words, each of its problems also noted by the Advanced field it is about
    (`Settings, temperature: …`, never the service's `settings.temperature`)."""
    errors = refusal.details.get("errors") if isinstance(refusal, InvalidInput) else None
    if not errors:
        return refusal.message
    for error in errors:
        loc = error.get("loc") or []
        problems.add(_field_of(loc), places.place_of(loc), places.plain(str(error.get("msg", ""))))
    return "; ".join(problems.summary)


def _field_of(loc: list[str | int]) -> str:
    """The Advanced field that holds a value the service placed at `loc`."""
    head, rest = (str(loc[0]), loc[1:]) if loc else ("", [])
    if head == "settings" and rest:
        return str(rest[0])
    if head == "subset":
        return SUBSET_FIELDS.get(str(rest[0]) if rest else "kind", "subset_kind")
    return head


@router.post(SUBMIT_PAGE, name="benchmark_submit")
def submit(request: Request, ctx: WebContext, benchmark_id: str, form: FormDep) -> Response:
    """Submit a results or code zip to a phase of a custom benchmark; it becomes a run."""
    typed = Submission(text_of(form, "phase"), text_of(form, "kind") or "auto")
    problems = Problems()
    found = read_upload(form, "submission", ctx.settings.max_submission_bytes, problems)
    phase = _phase_index(typed.phase, problems)
    if found is None or problems.summary:
        return _page(
            request, ctx, benchmark_id, "", status_code=422, submission=typed, problems=problems
        )
    try:
        with undo_on_error(ctx):
            run = submissions.submit(ctx, benchmark_id, *found, phase, typed.kind)
    except _SUBMIT_REFUSALS as exc:
        problems.add("submission", "", exc.message)
        return _page(
            request,
            ctx,
            benchmark_id,
            "",
            status_code=exc.http_status,
            submission=typed,
            problems=problems,
        )
    return redirect(request, "run", flash="Submission queued.", run_id=run.id)


def _phase_index(text: str, problems: Problems) -> int | None:
    """The phase's position as sent (none: the phase open now); anything but a plain number
    is a problem ("²" passes `isdigit` and fails `int`), never a quiet fall back to the default."""
    if not text:
        return None
    if text.isascii() and text.isdigit() and len(text) <= MAX_PHASE_DIGITS:
        return int(text)
    problems.add("phase", "Phase", "must be a phase number")
    return None


def _page(
    request: Request,
    ctx: Context,
    benchmark_id: str,
    model_id: str,
    refusal: BenchGenError | None = None,
    status_code: int = 200,
    submission: Submission | None = None,
    problems: Problems | None = None,
    advanced: dict[str, str] | None = None,
) -> Response:
    found = lifecycle.get_benchmark(ctx, benchmark_id)
    removed = members.removal_note(ctx, benchmark_id)
    if removed is not None:
        return _tab(request, found, status_code, removed=removed)
    choices = models.list_models(ctx, benchmark_id)
    groups = [
        (label, [model for model in choices if model.owner == source]) for source, label in SOURCES
    ]
    estimate: Estimate | None = None
    advanced = advanced or {}
    if model_id and refusal is None:
        try:
            estimate = launch.estimate_run(ctx, benchmark_id, model_id, run_options(advanced))
        except (NotFound, InvalidInput) as exc:
            refusal, status_code = exc, exc.http_status
    settings_problems = Problems()
    error = said_by_field(refusal, settings_problems) if refusal else ""
    current = _current_phase(ctx, benchmark_id)
    return _tab(
        request,
        found,
        status_code,
        groups=[(label, items) for label, items in groups if items],
        model_id=model_id,
        estimate=estimate,
        error=error,
        settings_problems=settings_problems,
        phases=phases.list_phases(ctx, benchmark_id),
        quota=ratelimits.run_quota(ctx, benchmark_id),
        balance=credits.get_balance(ctx),
        current_phase=current,
        submission=submission or Submission(current),
        problems=problems or Problems(),
        kinds=KINDS,
        max_submission_mib=max(ctx.settings.max_submission_bytes // (1024 * 1024), 1),
        advanced=advanced,
    )


def _tab(
    request: Request,
    found: BenchmarkView,
    status_code: int,
    removed: str | None = None,
    **values: Any,
) -> Response:
    """The Evaluate tab: its forms, or only why the person may not use them (`removed`)."""
    return render_tab(
        request,
        "benchmarks/evaluate.html",
        found,
        "benchmark_evaluate",
        status_code,
        removed=removed,
        **values,
    )


def _current_phase(ctx: Context, benchmark_id: str) -> str:
    """The phase a fresh run or submission form preselects: the one either goes to without a
    phase (the first open now), never simply the first, which may have ended."""
    position = submissions.current_phase(ctx, benchmark_id)
    return "" if position is None else str(position)
