"""Owner settings that shape how a benchmark is run: phases and tasks, and the AI judge."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import Response

from benchgen.core.context import Context
from benchgen.core.errors import Conflict, InvalidInput, NotFound
from benchgen.core.permissions import Action
from benchgen.services.benchmarks import judges, lifecycle, phases
from benchgen.services.runtime import undo_on_error
from benchgen.web.pages.benchmark_frame import FormDep, back_to, render_tab
from benchgen.web.pages.question_form import Problems, problems_of, text_of
from benchgen.web.session import WebContext, csrf_checked

router = APIRouter(dependencies=[Depends(csrf_checked)], include_in_schema=False)
PHASES = "benchmark_settings_phases"
JUDGE = "benchmark_settings_judge"
ObjectId = Annotated[str, Form(max_length=64)]


@router.get("/benchmarks/{benchmark_id}/settings/phases", name=PHASES)
def phases_page(request: Request, ctx: WebContext, benchmark_id: str) -> Response:
    """The phases and tasks, with forms to add and remove them."""
    return _phases(request, ctx, benchmark_id, {}, Problems())


@router.post("/benchmarks/{benchmark_id}/settings/phases/add", name="benchmark_phase_add")
def phase_add(request: Request, ctx: WebContext, benchmark_id: str, form: FormDep) -> Response:
    """Add a phase running the chosen tasks, open from and until the given times (UTC)."""
    typed = {name: text_of(form, name) for name in ("phase_name", "starts_at", "ends_at")}
    problems = Problems()
    starts, ends = _moment(typed, "starts_at", problems), _moment(typed, "ends_at", problems)
    tasks = [value for value in form.getlist("task_ids") if isinstance(value, str)]
    if problems.summary:
        return _phases(request, ctx, benchmark_id, typed, problems, 422, ticked=tasks)
    try:
        with undo_on_error(ctx):
            phases.add_phase(ctx, benchmark_id, typed["phase_name"], starts, ends, tasks)
    except (InvalidInput, NotFound) as exc:
        named = _named(exc, "phase_name")
        return _phases(request, ctx, benchmark_id, typed, named, exc.http_status, ticked=tasks)
    return back_to(request, PHASES, "Phase added.", benchmark_id=benchmark_id)


@router.post("/benchmarks/{benchmark_id}/settings/phases/remove", name="benchmark_phase_remove")
def phase_remove(
    request: Request, ctx: WebContext, benchmark_id: str, phase_id: ObjectId
) -> Response:
    """Remove a phase (a benchmark keeps at least one)."""
    try:
        with undo_on_error(ctx):
            phases.remove_phase(ctx, benchmark_id, phase_id)
    except Conflict as exc:
        return back_to(request, PHASES, exc.message, benchmark_id=benchmark_id)
    return back_to(request, PHASES, "Phase removed.", benchmark_id=benchmark_id)


@router.post("/benchmarks/{benchmark_id}/settings/tasks/add", name="benchmark_task_add")
def task_add(request: Request, ctx: WebContext, benchmark_id: str, form: FormDep) -> Response:
    """Add a task, active in the chosen phases."""
    typed = {"task_name": text_of(form, "task_name")}
    chosen = [value for value in form.getlist("phase_ids") if isinstance(value, str)]
    try:
        with undo_on_error(ctx):
            phases.add_task(ctx, benchmark_id, typed["task_name"], chosen)
    except (InvalidInput, NotFound) as exc:
        named = _named(exc, "task_name")
        return _phases(request, ctx, benchmark_id, typed, named, exc.http_status, ticked=chosen)
    return back_to(request, PHASES, "Task added.", benchmark_id=benchmark_id)


@router.post("/benchmarks/{benchmark_id}/settings/tasks/remove", name="benchmark_task_remove")
def task_remove(
    request: Request, ctx: WebContext, benchmark_id: str, task_id: ObjectId
) -> Response:
    """Remove a task (a benchmark keeps at least one)."""
    try:
        with undo_on_error(ctx):
            phases.remove_task(ctx, benchmark_id, task_id)
    except Conflict as exc:
        return back_to(request, PHASES, exc.message, benchmark_id=benchmark_id)
    return back_to(request, PHASES, "Task removed.", benchmark_id=benchmark_id)


def _moment(typed: dict[str, str], name: str, problems: Problems) -> datetime | None:
    """A date and time from the form, read as UTC; None when left empty."""
    text = typed[name].strip()
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text)
        return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    except (ValueError, OverflowError):  # OverflowError: an offset past year 1 or 9999
        problems.add(name, name.replace("_", " ").capitalize(), "not a date and time")
        return None


def _named(exc: InvalidInput | NotFound, field: str) -> Problems:
    """Problems of a form whose service names the field `name` (the page has two such)."""
    if isinstance(exc, NotFound):
        problems = Problems()
        problems.add(field, "", exc.message)
        return problems
    found = problems_of(exc, {})
    found.fields = {(field if key == "name" else key): value for key, value in found.fields.items()}
    return found


def _phases(
    request: Request,
    ctx: Context,
    benchmark_id: str,
    typed: dict[str, str],
    problems: Problems,
    status_code: int = 200,
    *,
    ticked: list[str] | None = None,
) -> Response:
    """The phases page; a form shown again keeps the boxes that were ticked (`ticked`: the
    task or phase ids sent), so fixing a name does not quietly add the phase without its tasks."""
    found = lifecycle.get_benchmark_for(ctx, benchmark_id, Action.PHASES_MANAGE)
    tasks = phases.list_tasks(ctx, benchmark_id)
    return render_tab(
        request,
        "benchmarks/settings_phases.html",
        found,
        "benchmark_settings",
        status_code,
        settings_tab=PHASES,
        phases=phases.list_phases(ctx, benchmark_id),
        tasks=tasks,
        task_names={task.id: task.name for task in tasks},
        typed=typed,
        ticked=set(ticked or []),
        problems=problems,
    )


@router.get("/benchmarks/{benchmark_id}/settings/judge", name=JUDGE)
def judge_page(request: Request, ctx: WebContext, benchmark_id: str) -> Response:
    """The AI judge as set up now, and the form to set it up or replace it."""
    return _judge(request, ctx, benchmark_id, {}, Problems())


@router.post("/benchmarks/{benchmark_id}/settings/judge", name="benchmark_judge_save")
def judge_save(request: Request, ctx: WebContext, benchmark_id: str, form: FormDep) -> Response:
    """Set up the judge; the API key is written here and never shown again."""
    typed = {name: text_of(form, name) for name in ("kind", "model", "base_url")}
    try:
        with undo_on_error(ctx):
            judges.set_judge(
                ctx,
                benchmark_id,
                typed["kind"],
                typed["model"],
                typed["base_url"].strip() or None,
                text_of(form, "api_key").strip() or None,
                allow_others=text_of(form, "allow_others") == "yes",
                keep_key=text_of(form, "keep_key") == "yes",
            )
    except InvalidInput as exc:
        # The key is never put back in the form: it would travel back to the browser.
        return _judge(request, ctx, benchmark_id, typed, problems_of(exc, {}), 422)
    return back_to(request, JUDGE, "The AI judge is set up.", benchmark_id=benchmark_id)


def _judge(
    request: Request,
    ctx: Context,
    benchmark_id: str,
    typed: dict[str, str],
    problems: Problems,
    status_code: int = 200,
) -> Response:
    found = lifecycle.get_benchmark_for(ctx, benchmark_id, Action.JUDGE_CONFIGURE)
    try:
        current = judges.get_judge(ctx, benchmark_id)
    except NotFound:
        current = None  # the owner's benchmark has no judge yet (others were refused above)
    return render_tab(
        request,
        "benchmarks/settings_judge.html",
        found,
        "benchmark_settings",
        status_code,
        settings_tab=JUDGE,
        judge=current,
        kinds=judges.JUDGE_KINDS,
        kind=typed.get("kind", current.kind if current else judges.JUDGE_KINDS[0]),
        model=typed.get("model", current.endpoint_model if current else ""),
        base_url=typed.get("base_url", (current.base_url or "") if current else ""),
        problems=problems,
    )
