"""One question at a time: replace, add or remove a question of a benchmark (the web editor).

Each is a full-list change through `lifecycle.edit_benchmark`, so freezing, validation, the
version bump and the audit record are exactly those of any other door.
"""

from __future__ import annotations

import json
from typing import Any

from benchgen.core.context import Context
from benchgen.core.errors import Conflict, NotFound
from benchgen.core.permissions import Action
from benchgen.services import access
from benchgen.services.benchmarks import _question_store, lifecycle, questions
from benchgen.services.benchmarks.lifecycle import BenchmarkView


def replace_question(
    ctx: Context,
    benchmark_id: str,
    position: int,
    question: dict[str, Any],
    expected_version: int | None = None,
) -> tuple[BenchmarkView, list[dict[str, Any]]]:
    """Put `question` in place of the one at `position` (its metadata is kept unless given);
    the benchmark, and the warnings about that question (two choices that read the same).

    Raises:
        NotFound: the benchmark is not visible, or it has no question at `position`.
        PermissionDenied: not the owner or a collaborator, or the token lacks the edit scope.
        Conflict: the benchmark changed since `expected_version`, or nothing changes.
        Frozen: the questions are frozen.
        InvalidInput: a bad question; problems at `questions.<position>.…`.
    """
    items = _current(ctx, benchmark_id, expected_version)
    _require_position(items, position, benchmark_id)
    items[position] = {"metadata": items[position]["metadata"], **question}
    return _apply(ctx, benchmark_id, items, position)


def add_question(
    ctx: Context, benchmark_id: str, question: dict[str, Any], expected_version: int | None = None
) -> tuple[BenchmarkView, list[dict[str, Any]]]:
    """Append `question` after the last one; the benchmark, and the warnings about it.

    Raises:
        As `replace_question`, with problems at `questions.<new position>.…`.
    """
    items = _current(ctx, benchmark_id, expected_version)
    return _apply(ctx, benchmark_id, [*items, question], len(items))


def remove_question(
    ctx: Context, benchmark_id: str, position: int, expected_version: int | None = None
) -> BenchmarkView:
    """Remove the question at `position`; the ones after it move up.

    Raises:
        As `replace_question`.
    """
    items = _current(ctx, benchmark_id, expected_version)
    _require_position(items, position, benchmark_id)
    del items[position]
    view, _ = _apply(ctx, benchmark_id, items, None)
    return view


def _current(ctx: Context, benchmark_id: str, expected_version: int | None) -> list[dict[str, Any]]:
    """The full question list as input shapes, answer keys and metadata included.

    The edit right is required before anything is read: the list carries the answer key. The
    benchmark is held from here until the edit is stored: two edits from one page read the same
    list (PostgreSQL), and the second stored its copy of it over the first's change.
    """
    row = access.require_held(ctx, benchmark_id, Action.BENCHMARK_EDIT, exclusive=True)
    # A position means nothing once someone else has changed the list: without this check a
    # stale page would edit or delete the wrong question.
    if expected_version is not None and row.version != expected_version:
        raise Conflict(
            "The questions changed since this page was opened; reload it and try again.",
            {"id": row.id, "version": row.version},
        )
    return [_as_input(question) for question in _question_store.load_canonical(ctx, row.id)]


def _as_input(question: questions.Canonical) -> dict[str, Any]:
    item: dict[str, Any] = {
        "prompt": question.prompt,
        "answer": question.answers[0] if question.choices is not None else list(question.answers),
        "tags": list(question.tags),
        "metadata": json.loads(question.metadata),
    }
    if question.choices is not None:
        item["choices"] = list(question.choices)
    return item


def _require_position(items: list[dict[str, Any]], position: int, benchmark_id: str) -> None:
    if not 0 <= position < len(items):
        raise NotFound("No such question.", {"id": benchmark_id, "position": position})


def _apply(
    ctx: Context, benchmark_id: str, items: list[dict[str, Any]], position: int | None
) -> tuple[BenchmarkView, list[dict[str, Any]]]:
    """Store the list; the warnings about the question at `position` (the others were there
    before this edit, and a page of one question would not show them by their field)."""
    view, preview = lifecycle.edit_benchmark(ctx, benchmark_id, {"questions": items})
    at = [warning for warning in preview.warnings if warning["loc"][1:2] == [position]]
    return view, at
