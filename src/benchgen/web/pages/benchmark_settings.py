"""General settings of a benchmark: title and description, publishing, outsiders' run quota,
and deleting it (typed confirmation)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import Response

from benchgen.core.context import Context
from benchgen.core.errors import Conflict, InvalidInput
from benchgen.core.permissions import Action
from benchgen.services.accounts import ratelimits
from benchgen.services.benchmarks import edit_tags, lifecycle
from benchgen.services.benchmarks.edit_tags import Stale
from benchgen.services.runtime import undo_on_error
from benchgen.web.confirmations import confirmed
from benchgen.web.pages.benchmark_frame import back_to, is_owner, render_tab
from benchgen.web.pages.question_form import Problems, problems_of
from benchgen.web.session import WebContext, csrf_checked
from benchgen.web.templating import redirect

router = APIRouter(dependencies=[Depends(csrf_checked)], include_in_schema=False)
SETTINGS = "benchmark_settings"
# Forms take any length (the body limit bounds them): an over-long value gets the service's
# message next to its field, with what was typed, never an error page that loses the form.
Title = Annotated[str, Form()]
Description = Annotated[str, Form()]


@router.get("/benchmarks/{benchmark_id}/settings", name=SETTINGS)
def settings_page(request: Request, ctx: WebContext, benchmark_id: str) -> Response:
    """Title, description and publishing for editors; quota and deletion for the owner."""
    return _page(request, ctx, benchmark_id, {}, Problems())


@router.post("/benchmarks/{benchmark_id}/settings", name="benchmark_settings_save")
def settings_save(
    request: Request,
    ctx: WebContext,
    benchmark_id: str,
    title: Title = "",
    description: Description = "",
    etag: Annotated[str, Form(max_length=200)] = "",
) -> Response:
    """Change the title and description (allowed even once the questions are frozen), unless
    someone changed them since this form was shown: then the form comes back as typed."""
    change = {"title": title, "description": description}
    try:
        with undo_on_error(ctx):
            lifecycle.edit_benchmark(ctx, benchmark_id, change, etag or None)
    except InvalidInput as exc:
        return _page(request, ctx, benchmark_id, change, problems_of(exc, {}), 422)
    except Stale as exc:
        return _page(request, ctx, benchmark_id, change, _overtaken(exc), 409)
    except Conflict as exc:
        return back_to(request, SETTINGS, exc.message, benchmark_id=benchmark_id)
    return back_to(request, SETTINGS, "Saved.", benchmark_id=benchmark_id)


@router.post("/benchmarks/{benchmark_id}/settings/publish", name="benchmark_publish")
def publish(request: Request, ctx: WebContext, benchmark_id: str) -> Response:
    """Make it visible to everyone (questions, never the answer key)."""
    try:
        with undo_on_error(ctx):
            lifecycle.publish_benchmark(ctx, benchmark_id)
    except Conflict as exc:
        return back_to(request, SETTINGS, exc.message, benchmark_id=benchmark_id)
    return back_to(request, SETTINGS, "Published.", benchmark_id=benchmark_id)


@router.post("/benchmarks/{benchmark_id}/settings/unpublish", name="benchmark_unpublish")
def unpublish(request: Request, ctx: WebContext, benchmark_id: str) -> Response:
    """Make it private again (the owner only)."""
    lifecycle.unpublish_benchmark(ctx, benchmark_id)
    return back_to(request, SETTINGS, "It is private again.", benchmark_id=benchmark_id)


@router.post("/benchmarks/{benchmark_id}/settings/quota", name="benchmark_run_quota")
def run_quota(
    request: Request,
    ctx: WebContext,
    benchmark_id: str,
    runs_per_day: Annotated[str, Form(max_length=20)] = "",
) -> Response:
    """Set outsiders' runs per day (empty: the deployment's default)."""
    text = runs_per_day.strip()
    try:
        value = int(text) if text else None
        with undo_on_error(ctx):
            ratelimits.set_run_quota(ctx, benchmark_id, value)
    except ValueError:
        problems = Problems()
        problems.add("runs_per_day", "Runs per day", "must be a whole number, or empty")
        return _page(request, ctx, benchmark_id, {"runs_per_day": text}, problems, 422)
    except InvalidInput as exc:
        return _page(request, ctx, benchmark_id, {"runs_per_day": text}, problems_of(exc, {}), 422)
    return back_to(request, SETTINGS, "Run quota saved.", benchmark_id=benchmark_id)


@router.post("/benchmarks/{benchmark_id}/settings/delete", name="benchmark_delete")
def delete(
    request: Request,
    ctx: WebContext,
    benchmark_id: str,
    confirm: Annotated[str, Form()] = "",
) -> Response:
    """Delete it once its title is typed (the page asks for the same in the browser)."""
    found = lifecycle.get_benchmark_for(ctx, benchmark_id, Action.BENCHMARK_DELETE)
    # Checked here too: the browser's check is a convenience a forged or scripted form skips.
    if not confirmed(confirm, found.title):
        problems = Problems()
        problems.add("confirm", "Confirmation", "type the benchmark's title exactly to delete it")
        return _page(request, ctx, benchmark_id, {"confirm": confirm}, problems, 422)
    lifecycle.delete_benchmark(ctx, benchmark_id)
    return redirect(request, "benchmarks", flash=f"Deleted “{found.title}”.")


def _overtaken(stale: Stale) -> Problems:
    """Say that another save came first, and what it changed; the typed text is kept."""
    changed = " and ".join(stale.details["changed"]) or "benchmark"
    problems = Problems()
    message = (
        f"Someone changed the {changed} since you opened this page; nothing was saved. Your "
        "text is below: save again to replace theirs."
    )
    problems.add("", "", message)
    return problems


def _page(
    request: Request,
    ctx: Context,
    benchmark_id: str,
    typed: dict[str, str],
    problems: Problems,
    status_code: int = 200,
) -> Response:
    found = lifecycle.get_benchmark_for(ctx, benchmark_id, Action.BENCHMARK_EDIT)
    quota = ratelimits.get_run_quota_setting(ctx, benchmark_id) if is_owner(found) else None
    return render_tab(
        request,
        "benchmarks/settings.html",
        found,
        SETTINGS,
        status_code,
        settings_tab=SETTINGS,
        title=typed.get("title", found.title),
        description=typed.get("description", found.description),
        runs_per_day=typed.get(
            "runs_per_day", str(quota.runs_per_day or "") if quota is not None else ""
        ),
        confirm=typed.get("confirm", ""),
        etag=edit_tags.tag_of(found.version, found.title, found.description),
        quota=quota,
        problems=problems,
    )
