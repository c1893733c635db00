"""Custom benchmarks from Codabench bundles: the upload page, the team's bundle settings with
its versions and a new-version form, and downloading a version."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import Response
from starlette.datastructures import FormData, UploadFile

from benchgen.core.context import Context, Principal
from benchgen.core.errors import Conflict, InvalidInput
from benchgen.core.permissions import Action
from benchgen.services.benchmarks import bundles, lifecycle
from benchgen.services.runtime import Runtime, transaction
from benchgen.web.files import attachment
from benchgen.web.pages.benchmark_frame import FormDep, back_to, render_tab
from benchgen.web.pages.question_form import Problems
from benchgen.web.session import SessionDep, WebContext, csrf_checked, runtime_of
from benchgen.web.templating import redirect, render

router = APIRouter(dependencies=[Depends(csrf_checked)], include_in_schema=False)
# The body limit lets these pages take a whole bundle (app.py names them).
UPLOAD_PAGE = "/benchmarks/upload"
VERSION_PAGE = "/benchmarks/{benchmark_id}/settings/bundle"
BUNDLE_SETTINGS = "benchmark_settings_bundle"


@router.get(UPLOAD_PAGE, name="benchmark_bundle_upload")
def upload_form(request: Request, ctx: WebContext) -> Response:
    """The form that takes a Codabench v2 bundle (.zip)."""
    return _upload_form(request, Problems())


@router.post(UPLOAD_PAGE, name="benchmark_bundle_upload_submit")
def upload_submit(request: Request, live: SessionDep, form: FormDep) -> Response:
    """Create a custom benchmark from the bundle; every problem is listed with its line."""
    problems = Problems()
    runtime = runtime_of(request)
    found = read_upload(form, "bundle", runtime.settings.max_bundle_bytes, problems)
    if found is None:
        return _upload_form(request, problems, 422)
    try:
        checked = _checked(runtime, live.principal, found)
        with transaction(runtime, live.principal) as ctx:
            created = bundles.upload_bundle(ctx, *found, checked)
            view = bundles.get_bundle(ctx, created.benchmark.id)
    except InvalidInput as exc:
        return _upload_form(request, bundle_problems(exc), 422)
    note = "Created from the bundle." + _warnings_note(created.warnings)
    note += _solutions_note(view.solutions or [])
    return redirect(request, "benchmark", flash=note, benchmark_id=created.benchmark.id)


@router.get(VERSION_PAGE, name=BUNDLE_SETTINGS)
def bundle_settings(request: Request, ctx: WebContext, benchmark_id: str) -> Response:
    """The current bundle, its solutions' results, the versions and a new-version form."""
    return _settings_page(request, ctx, benchmark_id, Problems())


@router.post(VERSION_PAGE, name="benchmark_bundle_version")
def bundle_version(
    request: Request, live: SessionDep, benchmark_id: str, form: FormDep
) -> Response:
    """Upload a changed bundle as the next version (runs keep the version they used)."""
    problems = Problems()
    runtime = runtime_of(request)
    found = read_upload(form, "bundle", runtime.settings.max_bundle_bytes, problems)
    if found is None:
        return _settings_again(request, live.principal, benchmark_id, problems)
    try:
        checked = _checked(runtime, live.principal, found, benchmark_id)
        with transaction(runtime, live.principal) as ctx:
            view = bundles.upload_bundle_version(ctx, benchmark_id, *found, checked)
    except InvalidInput as exc:
        return _settings_again(request, live.principal, benchmark_id, bundle_problems(exc))
    except Conflict as exc:
        return back_to(request, BUNDLE_SETTINGS, exc.message, benchmark_id=benchmark_id)
    note = f"Version {view.version} uploaded." + _warnings_note(view.warnings or [])
    note += _solutions_note(view.solutions or [])
    return back_to(request, BUNDLE_SETTINGS, note, benchmark_id=benchmark_id)


def _checked(
    runtime: Runtime,
    principal: Principal,
    found: tuple[bytes, str],
    benchmark_id: str | None = None,
) -> bundles.Checked:
    """The upload's guards in a unit of work that only reads, then its programs with none
    open: on SQLite a write transaction would hold back every other write on the server for
    as long as they run. The page stores the result in a write of its own.

    Raises:
        BenchGenError: what `bundles.check_bundle` and `BundleCheck.inspect` raise.
    """
    with transaction(runtime, principal, write=False) as ctx:
        pending = bundles.check_bundle(ctx, *found, benchmark_id)
    return pending.inspect()


def _settings_again(
    request: Request, principal: Principal, benchmark_id: str, problems: Problems
) -> Response:
    """The bundle settings page with the upload's problems, read in a unit of work of its own."""
    with transaction(runtime_of(request), principal, write=False) as ctx:
        return _settings_page(request, ctx, benchmark_id, problems, 422)


@router.get("/benchmarks/{benchmark_id}/bundle/download", name="benchmark_bundle_download")
def bundle_download(
    ctx: WebContext,
    benchmark_id: str,
    version: Annotated[int | None, Query(ge=1, le=1_000_000)] = None,
) -> Response:
    """The bundle zip as uploaded (the team only: it holds reference data and solutions)."""
    found = bundles.download_bundle(ctx, benchmark_id, version)
    return attachment(found.data, found.filename, "application/zip")


def read_upload(
    form: FormData, name: str, limit: int, problems: Problems
) -> tuple[bytes, str] | None:
    """The uploaded file's bytes and name, or None with the problem noted."""
    upload = form.get(name)
    if not isinstance(upload, UploadFile) or not upload.filename:
        problems.add(name, "File", "choose a .zip file")
        return None
    # Read one byte past the limit so an over-large file is refused, never truncated.
    data = upload.file.read(limit + 1)
    if len(data) > limit:
        problems.add(name, "File", f"is larger than {_mib(limit)} MiB")
        return None
    if not data:
        problems.add(name, "File", "is empty")
        return None
    return data, upload.filename.rsplit("/", 1)[-1]


def bundle_problems(exc: InvalidInput) -> Problems:
    """Every problem of a refused bundle, with its place in competition.yaml and its line."""
    found = Problems()
    for error in exc.errors or [{"loc": [], "msg": exc.message}]:
        found.add("bundle", _place(error), str(error.get("msg", "")))
    return found


def _place(error: dict[str, Any]) -> str:
    where = ".".join(str(part) for part in error.get("loc", []) or [])
    line = error.get("line")
    if line is not None:
        return f"Line {line}" + (f" ({where})" if where else "")
    return where


def _warnings_note(warnings: list[dict[str, Any]]) -> str:
    if not warnings:
        return ""
    listed = "; ".join(_problem_text(w) for w in warnings)
    return f" {len(warnings)} warning(s): {listed}."


def _problem_text(problem: dict[str, Any]) -> str:
    place = _place(problem)
    return f"{place}: {problem.get('msg', '')}" if place else str(problem.get("msg", ""))


def _solutions_note(solutions: list[dict[str, Any]]) -> str:
    if not solutions:
        return " The bundle has no solutions to check."
    parts = []
    for solution in solutions:
        name = solution.get("name") or f"#{solution.get('index', '')}"
        if solution.get("ok"):
            scores = ", ".join(f"{k} {v}" for k, v in (solution.get("scores") or {}).items())
            parts.append(f"{name} passed ({scores})" if scores else f"{name} passed")
        else:
            parts.append(f"{name} failed: {solution.get('error', '')}")
    return " Solutions: " + "; ".join(parts) + "."


def _mib(limit: int) -> int:
    return max(limit // (1024 * 1024), 1)


def _upload_form(request: Request, problems: Problems, status_code: int = 200) -> Response:
    return render(
        request,
        "benchmarks/bundle_upload.html",
        status_code,
        problems=problems,
        max_mib=_mib(runtime_of(request).settings.max_bundle_bytes),
    )


def _settings_page(
    request: Request,
    ctx: Context,
    benchmark_id: str,
    problems: Problems,
    status_code: int = 200,
) -> Response:
    found = lifecycle.get_benchmark_for(ctx, benchmark_id, Action.BENCHMARK_EDIT)
    return render_tab(
        request,
        "benchmarks/settings_bundle.html",
        found,
        "benchmark_settings",
        status_code,
        settings_tab=BUNDLE_SETTINGS,
        bundle=bundles.get_bundle(ctx, benchmark_id) if found.format == "custom" else None,
        problems=problems,
        max_mib=_mib(ctx.settings.max_bundle_bytes),
    )
