"""Benchmark import: questions from a JSONL or CSV file, checked line by line, then created."""

from __future__ import annotations

import csv
import io
import json
import string
from collections.abc import Iterator
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from benchgen.core.context import Context
from benchgen.core.errors import InvalidInput
from benchgen.core.permissions import Action
from benchgen.services import access
from benchgen.services.benchmarks import lifecycle
from benchgen.services.benchmarks.lifecycle import Created
from benchgen.services.specs import MAX_DESCRIPTION, MAX_TITLE, Text, Title, parse

MAX_CONTENT = 50_000_000
CHOICE_COLUMNS = [f"choice_{letter}" for letter in string.ascii_lowercase]


class ImportIn(BaseModel):
    """A file of questions. JSONL: one question object per line (prompt, answer, choices?,
    tags?). CSV: a header row with `prompt`, `answer` (several accepted answers separated by
    `|`), for mcq `choice_a`, `choice_b`, …, and optional `tags` (separated by `;`)."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    title: Title = Field(max_length=MAX_TITLE, examples=["Imported capitals"])
    format: Literal["qa", "mcq"]
    description: Text = Field("", max_length=MAX_DESCRIPTION)
    content_format: Literal["jsonl", "csv"] = "jsonl"
    content: str = Field(max_length=MAX_CONTENT, examples=['{"prompt": "2+2?", "answer": "4"}'])


def import_benchmark(ctx: Context, data: ImportIn | dict[str, Any]) -> Created:
    """Create a benchmark from a file; it counts against the creation limit like any other.

    Raises:
        PermissionDenied: the principal may not create benchmarks (checked before the file is
            read at all).
        InvalidInput: a line that cannot be read (its line number in `loc`), or bad questions.
        RateLimited: as for `lifecycle.create_benchmark`.
    """
    # Reading the file costs CPU and memory: someone who may not create gets nothing parsed.
    access.require(ctx, Action.BENCHMARK_CREATE)
    spec = parse(ImportIn, data)
    reader = _jsonl if spec.content_format == "jsonl" else _csv
    questions = reader(spec.content)
    return lifecycle.create_benchmark(
        ctx,
        {
            "title": spec.title,
            "format": spec.format,
            "description": spec.description,
            "questions": questions,
        },
    )


def _jsonl(content: str) -> list[dict[str, Any]]:
    questions = []
    # "\n" only: str.splitlines would also split inside a JSON string at U+2028 and friends.
    for number, line in enumerate(content.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            raise _bad(number, f"not valid JSON ({exc.msg})") from None
        except RecursionError:
            raise _bad(number, "nested too deeply") from None
        if not isinstance(item, dict):
            raise _bad(number, "each line must be one JSON object")
        questions.append(item)
    return questions


def _csv(content: str) -> list[dict[str, Any]]:
    lines = _Lines(content)
    try:
        return _csv_rows(csv.DictReader(lines))
    except csv.Error as exc:
        # Too long a field, a stray quote, a NUL: the reader stops on the line it was given last.
        raise _bad(lines.number, f"not valid CSV ({exc})") from None


def _csv_rows(rows: csv.DictReader[str]) -> list[dict[str, Any]]:
    missing = {"prompt", "answer"} - set(rows.fieldnames or [])
    if missing:
        raise _bad(1, f"the header needs the column(s) {', '.join(sorted(missing))}")
    questions = []
    for number, row in enumerate(rows, start=2):
        if None in row:
            raise _bad(number, "more cells than header columns")
        question: dict[str, Any] = {
            "prompt": row["prompt"] or "",
            "answer": [part for part in (row["answer"] or "").split("|") if part.strip()],
            "tags": [tag for tag in (row.get("tags") or "").split(";") if tag.strip()],
        }
        choices = [row[name] for name in CHOICE_COLUMNS if row.get(name)]
        if choices:
            question["choices"] = choices
            question["answer"] = (row["answer"] or "").strip()
        questions.append(question)
    return questions


class _Lines:
    """The file's lines for the CSV reader, counting them: the reader's own `line_num` is not
    yet advanced when it fails on a line, and record numbers drift from lines once a quoted
    field spans several."""

    def __init__(self, content: str) -> None:
        self._lines = iter(io.StringIO(content))  # split at "\n" only, as the reader expects
        self.number = 0

    def __iter__(self) -> Iterator[str]:
        return self

    def __next__(self) -> str:
        line = next(self._lines)
        self.number += 1
        return line


def _bad(line: int, message: str) -> InvalidInput:
    return InvalidInput(
        f"content line {line}: {message}", [{"loc": ["content", line], "msg": message}]
    )
