"""Dataset pages: my datasets with the upload form (problems shown by line), one dataset with
its preview, and deleting it (typed confirmation)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Form, Query, Request
from fastapi.responses import Response
from starlette.datastructures import FormData, UploadFile

from benchgen.core.errors import Conflict, InvalidInput, NotFound
from benchgen.core.text import plural
from benchgen.services.datasets import datasets
from benchgen.services.datasets.datasets import DatasetView
from benchgen.services.keysets import Newest
from benchgen.services.runtime import undo_on_error
from benchgen.web.confirmations import confirmed
from benchgen.web.pages.benchmark_frame import FormDep
from benchgen.web.pages.benchmarks import file_problems
from benchgen.web.pages.question_form import Problems, text_of
from benchgen.web.session import WebContext, csrf_checked, runtime_of
from benchgen.web.templating import redirect, render

router = APIRouter(dependencies=[Depends(csrf_checked)], include_in_schema=False)
# The body limit lets this page take a dataset as large as the API does.
UPLOAD_PAGE = "/datasets"
FORMATS = {
    "auto": "From the name and first rows (.csv is CSV, Parquet by its header, else JSON lines)",
    "chat": 'Chat JSON lines: {"messages": [{"role", "content"}, …]}',
    "prompt_completion": 'Prompt/completion JSON lines: {"prompt", "completion"}',
    "csv": "CSV with prompt and completion columns",
    "parquet": "Parquet",
}
_TEXT_FIELDS = ("name", "format", "map_messages", "map_prompt", "map_completion")
PAGE_SIZE = 200


@router.get(UPLOAD_PAGE, name="datasets")
def dataset_list(
    request: Request, ctx: WebContext, after: Annotated[str, Query(max_length=40)] = ""
) -> Response:
    """My datasets, newest first (those older than the dataset `after` when given), and the
    form to upload another."""
    return _list(request, ctx, {}, Problems(), after=after)


@router.post(UPLOAD_PAGE, name="dataset_upload")
def dataset_upload(request: Request, ctx: WebContext, form: FormDep) -> Response:
    """Store an uploaded dataset; each bad row is shown with its line, and nothing is kept."""
    typed = {name: text_of(form, name) for name in _TEXT_FIELDS}
    problems = Problems()
    found = _upload(form, problems)
    if found is None:
        return _list(request, ctx, typed, problems, 422)
    mapping = {
        name: typed[f"map_{name}"].strip()
        for name in ("messages", "prompt", "completion")
        if typed[f"map_{name}"].strip()
    }
    # Unknown formats go through as typed: the service refuses them by name.
    spec = {"name": typed["name"], "format": typed["format"] or "auto", "mapping": mapping}
    try:
        with undo_on_error(ctx):
            made = datasets.upload_dataset(ctx, found[0], found[1], spec)
    except InvalidInput as exc:
        return _list(request, ctx, typed, file_problems(exc), 422)
    flash = f"Uploaded “{made.name}”: {plural(made.row_count, 'row')}."
    return redirect(request, "dataset", flash=flash, dataset_id=made.id)


def _upload(form: FormData, problems: Problems) -> tuple[bytes, str] | None:
    """The file's bytes and name, or None with the problem noted."""
    upload = form.get("file")
    if isinstance(upload, UploadFile) and upload.filename:
        # The body limit has already bounded how much there is to read.
        data = upload.file.read()
        if data:
            return data, upload.filename.rsplit("/", 1)[-1]
    problems.add("file", "File", "choose a file to upload")
    return None


def _list(
    request: Request,
    ctx: WebContext,
    typed: dict[str, str],
    problems: Problems,
    status_code: int = 200,
    after: str = "",
) -> Response:
    limit = runtime_of(request).settings.max_dataset_bytes
    key = _key(ctx, after)
    found = datasets.list_datasets(ctx, PAGE_SIZE + 1, key)
    return render(
        request,
        "datasets/list.html",
        status_code,
        found=found[:PAGE_SIZE],
        older=found[PAGE_SIZE - 1].id if len(found) > PAGE_SIZE else "",
        paged=key is not None,
        typed={name: typed.get(name, "") for name in _TEXT_FIELDS},
        formats=FORMATS,
        problems=problems,
        max_mib=max(limit // (1024 * 1024), 1),
    )


def _key(ctx: WebContext, dataset_id: str) -> Newest | None:
    """Where a page after the dataset `dataset_id` starts; None, the newest page, when it is
    none of mine: deleted since its page was shown (Back after deleting it), the whole list
    answered 404 "No such dataset"."""
    if not dataset_id:
        return None
    try:
        last = datasets.get_dataset(ctx, dataset_id)
    except NotFound:
        return None
    return last.created_at, last.id


@router.get("/datasets/{dataset_id}", name="dataset")
def dataset_page(request: Request, ctx: WebContext, dataset_id: str) -> Response:
    """One dataset: its counts, a preview of its first rows, and deleting it."""
    return _dataset_page(request, datasets.get_dataset(ctx, dataset_id), Problems())


@router.post("/datasets/{dataset_id}/delete", name="dataset_delete")
def dataset_delete(
    request: Request,
    ctx: WebContext,
    dataset_id: str,
    confirm: Annotated[str, Form(max_length=400)] = "",
) -> Response:
    """Delete it once its name is typed (the page asks for the same in the browser)."""
    found = datasets.get_dataset(ctx, dataset_id)
    # Checked here too: the browser's check is a convenience a forged or scripted form skips.
    if not confirmed(confirm, found.name):
        problems = Problems()
        problems.add("confirm", "Confirmation", "type the dataset's name exactly to delete it")
        return _dataset_page(request, found, problems, 422)
    try:
        datasets.delete_dataset(ctx, dataset_id)
    except Conflict as exc:
        # On its own page with a link to the job that holds it, not on a bare error page.
        return _dataset_page(request, found, Problems(), 409, busy=exc)
    return redirect(request, "datasets", flash=f"Deleted “{found.name}”.")


def _dataset_page(
    request: Request,
    found: DatasetView,
    problems: Problems,
    status_code: int = 200,
    busy: Conflict | None = None,
) -> Response:
    return render(
        request,
        "datasets/dataset.html",
        status_code,
        dataset=found,
        format_label=FORMATS.get(found.format, found.format),
        problems=problems,
        busy=busy,
    )
