"""Benchmark pages: the list with search, the question editor that creates one, file imports."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import Response
from starlette.datastructures import FormData, UploadFile

from benchgen.core.errors import InvalidInput
from benchgen.services.benchmarks import imports, lifecycle
from benchgen.services.benchmarks.lifecycle import Created
from benchgen.services.runtime import undo_on_error
from benchgen.web.pages.benchmark_frame import FormDep
from benchgen.web.pages.question_form import (
    FORMATS,
    MAX_ROWS,
    Problems,
    Row,
    problems_of,
    rows_from,
    text_of,
)
from benchgen.web.places import described
from benchgen.web.session import WebContext, csrf_checked, runtime_of
from benchgen.web.templating import redirect, render

router = APIRouter(dependencies=[Depends(csrf_checked)], include_in_schema=False)
PAGE_SIZE = 25
SECTIONS = (
    ("all", "All"),
    ("mine", "Mine"),
    ("shared", "Shared with me"),
    ("published", "Published"),
)
_CAPTIONS = {
    "all": "Yours, those shared with you, and published ones, newest first.",
    "mine": "Benchmarks you own.",
    "shared": "Benchmarks you collaborate on or joined.",
    "published": "Benchmarks anyone can see and run.",
}
Section = Literal["all", "mine", "shared", "published"]


@router.get("/benchmarks", name="benchmarks")
def benchmark_list(
    request: Request,
    ctx: WebContext,
    q: Annotated[str, Query(max_length=200)] = "",
    show: Section = "all",
    page: Annotated[int, Query(ge=1, le=1000)] = 1,
) -> Response:
    """Benchmarks I own, share, joined, or that are published; with search and pages."""
    found = lifecycle.list_benchmarks(
        ctx, search=q, limit=PAGE_SIZE + 1, offset=(page - 1) * PAGE_SIZE, section=show
    )
    return render(
        request,
        "benchmarks/list.html",
        benchmarks=found[:PAGE_SIZE],
        more=len(found) > PAGE_SIZE,
        page=page,
        q=q,
        show=show,
        sections=SECTIONS,
        caption=_CAPTIONS[show],
    )


@router.get("/benchmarks/new", name="benchmark_new")
def benchmark_new(
    request: Request, ctx: WebContext, format: Literal["qa", "mcq"] = "qa"
) -> Response:
    """The question editor for a new benchmark, with two empty rows."""
    return _editor(request, format, "", "", [Row(), Row()], Problems())


@router.post("/benchmarks", name="benchmark_create")
def benchmark_create(request: Request, ctx: WebContext, form: FormDep) -> Response:
    """Add an editor row, or create the benchmark from the rows that are filled in."""
    fmt = text_of(form, "format")
    title, description = text_of(form, "title"), text_of(form, "description")
    rows = rows_from(form)
    action = text_of(form, "action")
    if fmt not in FORMATS:
        # Only a crafted form sends another: taking it as qa would quietly change the questions.
        problems = Problems()
        problems.add("format", "Format", "choose Question and answer or Multiple choice")
        return _editor(request, "qa", title, description, rows, problems, 422)
    if action == "add" or action.startswith("remove-"):
        rows, focus = _edit_rows(rows, action)
        return _editor(request, fmt, title, description, rows, Problems(), focus=focus)
    switch_to = action.removeprefix("format-") if action.startswith("format-") else ""
    if switch_to in FORMATS:  # a format tab: the same editor in that format, nothing lost
        return _editor(request, switch_to, title, description, rows, Problems())
    filled = [(index, row) for index, row in enumerate(rows) if not row.is_blank(fmt)]
    data = {
        "title": title,
        "description": description,
        "format": fmt,
        "questions": [row.as_question(fmt) for _, row in filled],
    }
    try:
        with undo_on_error(ctx):
            created = lifecycle.create_benchmark(ctx, data)
    except InvalidInput as exc:
        places = {n: (index, index + 1) for n, (index, _) in enumerate(filled)}
        problems = problems_of(exc, places)
        return _editor(request, fmt, title, description, rows, problems, 422)
    return _created(request, created, {n: index + 1 for n, (index, _) in enumerate(filled)})


def _edit_rows(rows: list[Row], action: str) -> tuple[list[Row], int]:
    """The rows after "Add question" or "Remove question N" (`remove-<index>`), and the row whose
    prompt takes the focus: the new one, or the one now in the removed one's place. Without it a
    keyboard user started again from the top of the page."""
    if action == "add":
        rows = [*rows, Row()][:MAX_ROWS]
        return rows, len(rows) - 1
    index = action.removeprefix("remove-")
    if index.isdigit() and int(index) < len(rows):
        rows = rows[: int(index)] + rows[int(index) + 1 :]
        return rows, min(int(index), max(len(rows) - 1, 0))
    return rows, 0


def _editor(
    request: Request,
    fmt: str,
    title: str,
    description: str,
    rows: list[Row],
    problems: Problems,
    status_code: int = 200,
    focus: int | None = None,
) -> Response:
    return render(
        request,
        "benchmarks/new.html",
        status_code,
        fmt=fmt,
        title=title,
        description=description,
        rows=rows or [Row()],
        problems=problems,
        max_rows=MAX_ROWS,
        focus=focus,
    )


def _created(request: Request, created: Created, numbers: dict[int, int] | None = None) -> Response:
    """The new benchmark's page, with a note of its first warning; `numbers` maps a question's
    index to the number the editor showed it under."""
    count = created.benchmark.question_count
    note = f"Created with {count} question{'s' if count != 1 else ''}."
    if created.warnings:
        first = described(created.warnings[0], numbers)
        note += f" {len(created.warnings)} warning(s), e.g. {first}."
    return redirect(request, "benchmark", flash=note, benchmark_id=created.benchmark.id)


# The body limit lets this page take as much as the API's import (a file of questions).
IMPORT_PAGE = "/benchmarks/import"
_TEXT_FIELDS = ("title", "description", "format", "file_format", "preset", "content")
# The mapping's text inputs: `map_choices` names one column, or several separated by commas.
_MAP_FIELDS = ("prompt", "answer", "choices", "tags", "id")
_ANSWER_IS = ("auto", "index", "letter", "text")
_PASTED = "pasted"  # the name pasted text is imported under, before its type's suffix


@router.get(IMPORT_PAGE, name="benchmark_import")
def benchmark_import(request: Request, ctx: WebContext) -> Response:
    """The import form: an uploaded file (or pasted text), its type, a preset and a mapping."""
    return _import_form(request, {}, Problems())


@router.post(IMPORT_PAGE, name="benchmark_import_submit")
def benchmark_import_submit(request: Request, ctx: WebContext, form: FormDep) -> Response:
    """Create a benchmark from the file; each problem is shown with its line or row."""
    typed = {name: text_of(form, name) for name in _TEXT_FIELDS}
    typed |= {f"map_{name}": text_of(form, f"map_{name}") for name in (*_MAP_FIELDS, "answer_is")}
    problems = Problems()
    found = _upload(form, typed, problems)
    if found is None:
        return _import_form(request, typed, problems, 422)
    spec = {
        "title": typed["title"],
        "description": typed["description"],
        # Unknown choices go through as typed: the service refuses them by name.
        "format": typed["format"] or None,
        "file_format": typed["file_format"] or "auto",
        "preset": typed["preset"] or "none",
        "mapping": _mapping(typed),
    }
    try:
        with undo_on_error(ctx):
            created = imports.import_file(ctx, found[0], found[1], spec)
    except InvalidInput as exc:
        problems = file_problems(exc)
        if typed["content"].strip():  # pasted, as a file and pasted text are refused together
            problems = _at_pasted_text(problems)
        return _import_form(request, typed, problems, 422)
    return _created(request, created)


def _upload(form: FormData, typed: dict[str, str], problems: Problems) -> tuple[bytes, str] | None:
    """The file's bytes and name (a file or pasted text, never both), or None with the problem."""
    upload = form.get("file")
    if isinstance(upload, UploadFile) and upload.filename and typed["content"].strip():
        # Taking one and dropping the other would import what the person did not mean.
        problems.add("file", "File", "choose a file or paste its content, not both")
        return None
    if isinstance(upload, UploadFile) and upload.filename:
        # The body limit has already bounded how much there is to read.
        data = upload.file.read()
        if data:
            return data, upload.filename.rsplit("/", 1)[-1]
    elif typed["content"].strip():
        return typed["content"].encode(), _pasted_name(typed)
    problems.add("file", "File", "choose a file or paste its content")
    return None


def _pasted_name(typed: dict[str, str]) -> str:
    """A name for pasted text that tells its type: CSV when chosen, or, left to BenchGen, when it
    does not start as JSON does (pasted CSV was read as JSONL: "Line 1: not valid JSON")."""
    chosen = typed["file_format"]
    if chosen == "csv" or (chosen in ("", "auto") and typed["content"].lstrip()[:1] not in "{["):
        return f"{_PASTED}.csv"
    return f"{_PASTED}.jsonl"


def _at_pasted_text(problems: Problems) -> Problems:
    """The file's problems put at the box the text was pasted in, where the person must look
    and where the cursor goes, rather than at the empty file field."""
    moved = Problems(summary=[_pasted_place(problem) for problem in problems.summary])
    for key, messages in problems.fields.items():
        moved.fields.setdefault("content" if key == "file" else key, []).extend(messages)
    return moved


def _pasted_place(problem: str) -> str:
    """ "Line 3: …" of the pasted text as "Pasted content, line 3: …"."""
    if problem.startswith(("Line ", "Row ")):
        return f"Pasted content, {problem[0].lower()}{problem[1:]}"
    return problem


def _mapping(typed: dict[str, str]) -> dict[str, object]:
    """The mapping's filled-in inputs; the preset or BenchGen's names fill the rest."""
    mapping: dict[str, object] = {}
    for name in _MAP_FIELDS:
        value = typed[f"map_{name}"].strip()
        if value and name == "choices":
            mapping[name] = [column.strip() for column in value.split(",") if column.strip()]
        elif value:
            mapping[name] = value
    if typed["map_answer_is"] not in ("", "auto"):
        mapping["answer_is"] = typed["map_answer_is"]
    return mapping


def file_problems(exc: InvalidInput) -> Problems:
    """Each problem at its field; a file's by line (text files) or row (Parquet, Arrow), as
    the service's message names the first one."""
    word = "Row" if exc.message.startswith("row ") else "Line"
    found = Problems()
    for error in exc.details.get("errors") or [{"loc": [], "msg": exc.message}]:
        loc, message = list(error.get("loc", [])), str(error.get("msg", ""))
        if len(loc) >= 2 and loc[0] == "file" and isinstance(loc[1], int):
            found.add("file", ", ".join([f"{word} {loc[1]}", *map(str, loc[2:])]), message)
        elif loc and loc[0] in ("mapping", "preset"):
            place = " ".join(str(part) for part in loc).capitalize()
            found.add(str(loc[0]), place, message)
        elif loc:
            found.add(str(loc[0]), str(loc[0]).replace("_", " ").capitalize(), message)
        else:
            found.add("", "", message)
    return found


def _import_form(
    request: Request, typed: dict[str, str], problems: Problems, status_code: int = 200
) -> Response:
    limit = runtime_of(request).settings.max_import_bytes
    return render(
        request,
        "benchmarks/import.html",
        status_code,
        typed={name: typed.get(name, "") for name in _TEXT_FIELDS},
        mapped={name: typed.get(f"map_{name}", "") for name in (*_MAP_FIELDS, "answer_is")},
        answer_is=_ANSWER_IS,
        problems=problems,
        max_mib=max(limit // (1024 * 1024), 1),
    )
