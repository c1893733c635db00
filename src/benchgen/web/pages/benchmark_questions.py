"""The Questions tab: questions page by page, and one at a time edited, added or removed."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Query, Request
from fastapi.responses import Response
from starlette.datastructures import FormData

from benchgen.core.errors import Conflict, InvalidInput, NotFound
from benchgen.core.permissions import Action
from benchgen.services.benchmarks import lifecycle, question_edits
from benchgen.services.benchmarks.lifecycle import BenchmarkView
from benchgen.services.runtime import undo_on_error
from benchgen.services.specs import MAX_QUESTIONS
from benchgen.web.pages.benchmark_frame import FormDep, back_to, render_tab
from benchgen.web.pages.question_form import Problems, Row, problems_of, rows_from, text_of
from benchgen.web.places import described
from benchgen.web.session import WebContext, csrf_checked

router = APIRouter(dependencies=[Depends(csrf_checked)], include_in_schema=False)
PAGE_SIZE = 25
Number = Annotated[int, Path(ge=1, le=MAX_QUESTIONS)]


@router.get("/benchmarks/{benchmark_id}/questions", name="benchmark_questions")
def question_list(
    request: Request,
    ctx: WebContext,
    benchmark_id: str,
    page: Annotated[int, Query(ge=1, le=MAX_QUESTIONS // PAGE_SIZE)] = 1,
) -> Response:
    """The questions in order, answers only for those who may see the key."""
    found = lifecycle.get_benchmark(ctx, benchmark_id)
    offset = (page - 1) * PAGE_SIZE
    window = lifecycle.list_questions(ctx, benchmark_id, PAGE_SIZE + 1, offset)
    return render_tab(
        request,
        "benchmarks/questions.html",
        found,
        "benchmark_questions",
        questions=window[:PAGE_SIZE],
        more=len(window) > PAGE_SIZE,
        page=page,
    )


@router.get("/benchmarks/{benchmark_id}/questions/new", name="benchmark_question_new")
def question_new(request: Request, ctx: WebContext, benchmark_id: str) -> Response:
    """An empty question to add after the last one."""
    found = lifecycle.get_benchmark_for(ctx, benchmark_id, Action.BENCHMARK_EDIT)
    return _form(request, found, None, Row(), Problems(), read_only=found.questions_frozen)


@router.post("/benchmarks/{benchmark_id}/questions/new", name="benchmark_question_add")
def question_add(request: Request, ctx: WebContext, benchmark_id: str, form: FormDep) -> Response:
    """Append the question (its problems shown next to its fields)."""
    found = lifecycle.get_benchmark_for(ctx, benchmark_id, Action.BENCHMARK_EDIT)
    row = _row(form)
    number = found.question_count + 1
    try:
        with undo_on_error(ctx):
            _, warnings = question_edits.add_question(
                ctx, benchmark_id, row.as_question(found.format), _version(form)
            )
    except InvalidInput as exc:
        problems = problems_of(exc, {number - 1: (0, number)})
        return _form(request, found, None, row, problems, 422)
    except Conflict as exc:
        problem = _problem(exc.message)
        return _form(request, found, None, row, problem, exc.http_status, since=_version(form))
    return _to_page(request, benchmark_id, number, _saved(f"Question {number} added.", warnings))


# Taken as text: 0, -1 or a word in a bookmark is a missing question (404), not a form error.
@router.get("/benchmarks/{benchmark_id}/questions/{number}", name="benchmark_question_edit")
def question_edit(request: Request, ctx: WebContext, benchmark_id: str, number: str) -> Response:
    """One question in the editor, as stored; shown read-only while the questions are frozen."""
    found = lifecycle.get_benchmark_for(ctx, benchmark_id, Action.BENCHMARK_EDIT)
    position, stored = _stored(ctx, benchmark_id, number)
    row = Row.from_question(stored)
    read_only = found.questions_frozen
    return _form(request, found, position, row, Problems(), read_only=read_only, stored=stored)


@router.get(
    "/benchmarks/{benchmark_id}/questions/{number}/delete",
    name="benchmark_question_delete_confirm",
)
def question_delete_confirm(
    request: Request, ctx: WebContext, benchmark_id: str, number: str
) -> Response:
    """The question as stored, and a button that removes it: one click on a list deletes nothing."""
    found = lifecycle.get_benchmark_for(ctx, benchmark_id, Action.BENCHMARK_EDIT)
    position, stored = _stored(ctx, benchmark_id, number)
    return render_tab(
        request,
        "benchmarks/question_delete.html",
        found,
        "benchmark_questions",
        number=position,
        stored=stored,
        list_page=_page_of(position),
    )


def _stored(ctx: WebContext, benchmark_id: str, number: str) -> tuple[int, dict[str, Any]]:
    """(position counted from 1, the question as stored); a missing one is a 404."""
    # A few digits at most: int() refuses a string of thousands of them.
    position = int(number) if number.isascii() and number.isdigit() and len(number) <= 6 else 0
    stored = (
        lifecycle.list_questions(ctx, benchmark_id, 1, position - 1)
        if 1 <= position <= MAX_QUESTIONS
        else []
    )
    if not stored:
        raise NotFound("No such question.", {"number": number})
    return position, stored[0]


@router.post("/benchmarks/{benchmark_id}/questions/{number}", name="benchmark_question_save")
def question_save(
    request: Request, ctx: WebContext, benchmark_id: str, number: Number, form: FormDep
) -> Response:
    """Replace the question with what the editor sent."""
    found = lifecycle.get_benchmark_for(ctx, benchmark_id, Action.BENCHMARK_EDIT)
    row = _row(form)
    try:
        with undo_on_error(ctx):
            _, warnings = question_edits.replace_question(
                ctx, benchmark_id, number - 1, row.as_question(found.format), _version(form)
            )
    except InvalidInput as exc:
        problems = problems_of(exc, {number - 1: (0, number)})
        return _form(request, found, number, row, problems, 422)
    except Conflict as exc:
        problem = _problem(exc.message)
        return _form(request, found, number, row, problem, exc.http_status, since=_version(form))
    return _to_page(request, benchmark_id, number, _saved(f"Question {number} saved.", warnings))


@router.post(
    "/benchmarks/{benchmark_id}/questions/{number}/delete", name="benchmark_question_delete"
)
def question_delete(
    request: Request, ctx: WebContext, benchmark_id: str, number: Number, form: FormDep
) -> Response:
    """Remove the question; those after it move up."""
    try:
        with undo_on_error(ctx):
            question_edits.remove_question(ctx, benchmark_id, number - 1, _version(form))
    except Conflict as exc:
        return _to_page(request, benchmark_id, number, exc.message)
    return _to_page(request, benchmark_id, number, f"Question {number} removed.")


def _row(form: FormData) -> Row:
    rows = rows_from(form)
    return rows[0] if rows else Row()


def _version(form: FormData) -> int | None:
    """The version the editor was opened at (none sent: no check). One that is not a plain
    number ("²" passes `isdigit` and fails `int`) is no version there ever was, so the change
    is refused as a conflict rather than made unchecked."""
    text = text_of(form, "version")
    if not text:
        return None
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 18 else 0


def _saved(note: str, warnings: list[dict[str, Any]]) -> str:
    """The note, and what was saved although it looks like a slip (two choices alike)."""
    said = "; ".join(described(warning) for warning in warnings)
    return f"{note} Warning: {said}." if said else note


def _problem(message: str) -> Problems:
    problems = Problems()
    problems.add("", "", message)
    return problems


def _page_of(number: int) -> int:
    """The page of the question list that shows question `number` (counted from 1)."""
    return (number - 1) // PAGE_SIZE + 1


def _to_page(request: Request, benchmark_id: str, number: int, flash: str) -> Response:
    page = _page_of(number)
    return back_to(request, "benchmark_questions", flash, f"page={page}", benchmark_id=benchmark_id)


def _form(
    request: Request,
    benchmark: BenchmarkView,
    number: int | None,
    row: Row,
    problems: Problems,
    status_code: int = 200,
    *,
    read_only: bool = False,
    stored: dict[str, Any] | None = None,
    since: int | None = None,
) -> Response:
    """The editor, or with `read_only` the stored question and why it cannot change.

    `since` is the version the editor was opened at, kept after a conflict: with the version
    of now, saving again would pass the check and write over whatever question has taken the
    number meanwhile."""
    return render_tab(
        request,
        "benchmarks/question_edit.html",
        benchmark,
        "benchmark_questions",
        status_code,
        number=number,
        row=row,
        problems=problems,
        read_only=read_only,
        stored=stored,
        since=benchmark.version if since is None else since,
        # Cancel goes back to the page the question is on, as Save does, not to page 1.
        list_page=_page_of(number) if number else 1,
    )
