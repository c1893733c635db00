"""The training page: my jobs, the compute there is, and the new-job form that shows the full
plan (steps, memory, availability, duration, credits) before the job can be launched."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import Response

from benchgen.core.clock import iso_utc
from benchgen.core.errors import InsufficientCredits, InvalidInput, NotFound
from benchgen.services.datasets import datasets
from benchgen.services.keysets import Newest
from benchgen.services.runtime import undo_on_error
from benchgen.services.training import bases, compute, durations, jobs, plans
from benchgen.services.training.plans import TrainingPlan
from benchgen.web.pages import training_form
from benchgen.web.pages.benchmark_frame import FormDep
from benchgen.web.pages.question_form import Problems, text_of
from benchgen.web.session import WebContext, csrf_checked
from benchgen.web.templating import redirect, render

router = APIRouter(dependencies=[Depends(csrf_checked)], include_in_schema=False)
JOBS_SHOWN = 100
DATASETS_SHOWN = 200
Picked = Annotated[str, Query(max_length=40)]
# The plan's Launch form carries when the plan was shown: Back to the plan and Launch again
# started a second job, and spent its credits, without a word.
SHOWN_AT = "plan_shown_at"


@router.get("/training", name="training")
def training_page(
    request: Request,
    ctx: WebContext,
    dataset_id: Picked = "",
    base_model_id: Picked = "",
    after: Picked = "",
) -> Response:
    """My training jobs (those older than the job `after` when given), the compute inventory,
    and the form for a new job (a dataset or base model may come chosen from its own page)."""
    chosen = {"base_model_id": base_model_id, "dataset_id": dataset_id}
    return _page(request, ctx, chosen, Problems(), after=after)


@router.post("/training/plan", name="training_plan")
def training_plan(request: Request, ctx: WebContext, form: FormDep) -> Response:
    """Check the form and show its plan beside it, with the Launch button; nothing is written."""
    typed = training_form.typed_of(form)
    try:
        plan = plans.plan_training(ctx, training_form.request_of(typed))
    except (InvalidInput, NotFound) as exc:
        return _page(request, ctx, typed, training_form.problems_of(exc, typed), status_code=422)
    return _page(request, ctx, typed, Problems(), plan=plan)


@router.post("/training/launch", name="training_launch")
def training_launch(request: Request, ctx: WebContext, form: FormDep) -> Response:
    """Launch the job the plan showed (checked again now, its credits reserved) and go to its
    page. A refusal shows the form again and keeps nothing."""
    typed = training_form.typed_of(form)
    data = training_form.request_of(typed)
    newest = _launched_since(ctx, text_of(form, SHOWN_AT))
    if newest is not None:
        problems = Problems()
        said = (
            f"“{newest.name}” was launched after this plan was shown: check it is not this one "
            "(its page is in your jobs above). Launch again to start another."
        )
        problems.add("launch", "Launched already?", said)
        plan = plans.plan_training(ctx, data)
        return _page(request, ctx, typed, problems, status_code=409, plan=plan)
    try:
        with undo_on_error(ctx):
            made = jobs.start_training(ctx, data)
    except (InvalidInput, NotFound) as exc:
        return _page(request, ctx, typed, training_form.problems_of(exc, typed), status_code=422)
    except InsufficientCredits as exc:
        # The plan is shown again with today's balance, so the shortfall is plain to see.
        problems = Problems()
        problems.add("credits", "Not enough credits", exc.message)
        plan = plans.plan_training(ctx, data)
        return _page(request, ctx, typed, problems, status_code=402, plan=plan)
    flash = f"Launched “{made.name}”: {made.total_steps} steps."
    return redirect(request, "training_job", flash=flash, training_id=made.id)


def _page(
    request: Request,
    ctx: WebContext,
    typed: dict[str, str],
    problems: Problems,
    status_code: int = 200,
    plan: TrainingPlan | None = None,
    after: str = "",
) -> Response:
    """The page; `typed` holds every field, or on first sight only the choices asked for."""
    choices = bases.list_training_bases(ctx)
    mine = datasets.list_datasets(ctx, DATASETS_SHOWN)
    if len(typed) < len(training_form.ALL_FIELDS):
        first_base = next((b.id for b in choices if b.trainable), "")
        first_data = mine[0].id if mine else ""
        typed = training_form.defaults(
            typed.get("base_model_id") or first_base, typed.get("dataset_id") or first_data
        )
    key = _key(ctx, after)
    found = jobs.list_training_jobs(ctx, JOBS_SHOWN + 1, key)
    return render(
        request,
        "training/list.html",
        status_code,
        found=found[:JOBS_SHOWN],
        older=found[JOBS_SHOWN - 1].id if len(found) > JOBS_SHOWN else "",
        paged=key is not None,
        pools=compute.compute_inventory(ctx),
        choices=choices,
        datasets=mine,
        typed=typed,
        numbers=training_form.number_fields(),
        gpus=training_form.gpus_field(),
        job_types=training_form.JOB_TYPES,
        labels=training_form.LABELS,
        problems=problems,
        plan=plan,
        plan_fields=training_form.ALL_FIELDS,
        plan_shown_at=iso_utc(ctx.now()),
        duration=durations.duration_words(plan.estimated_seconds) if plan else "",
    )


def _launched_since(ctx: WebContext, shown_at: str) -> jobs.TrainingJobView | None:
    """My newest job, when it was launched after the plan was shown at `shown_at` (a form
    without the time, or with one that is no time, checks nothing)."""
    try:
        shown = datetime.fromisoformat(shown_at)
    except ValueError:
        return None
    if shown.tzinfo is None:  # not a time this page wrote
        return None
    found = jobs.list_training_jobs(ctx, 1, None)
    return found[0] if found and found[0].created_at > shown else None


def _key(ctx: WebContext, training_id: str) -> Newest | None:
    """Where a page after the job `training_id` starts; None, the newest page, when it is none
    of mine (a link from another account, say), as the dataset list does."""
    if not training_id:
        return None
    try:
        last = jobs.get_training_job(ctx, training_id)
    except NotFound:
        return None
    return last.created_at, last.id
