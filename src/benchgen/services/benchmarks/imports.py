"""Benchmark import: questions from a JSONL, CSV, Parquet or Hugging Face dataset file, mapped
field by field, checked row by row, then created."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from benchgen.core.context import Context
from benchgen.core.errors import InvalidInput, invalid, invalid_all
from benchgen.core.permissions import Action
from benchgen.core.text import MAX_DESCRIPTION, MAX_TITLE
from benchgen.services import access
from benchgen.services.benchmarks import file_rows, lifecycle, mapping
from benchgen.services.benchmarks.lifecycle import Created
from benchgen.services.benchmarks.mapping import FieldMap, Preset, RowProblem
from benchgen.services.specs import MAX_QUESTIONS, Text, parse

MAX_CONTENT = 50_000_000


class ImportIn(BaseModel):
    """A file of questions. JSONL: one question object per line (prompt, answer, choices?,
    tags?), each key once, or one JSON array of such objects. CSV: a header row with `prompt`,
    `answer` (several accepted answers separated by `|`), for mcq `choice_a`, `choice_b`, …
    (none left empty before a given one), and optional `tags` (separated by `;`); each column
    named once."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    title: str = Field(max_length=MAX_TITLE, examples=["Imported capitals"])  # see _with_title
    format: Literal["qa", "mcq"]
    description: Text = Field("", max_length=MAX_DESCRIPTION)
    content_format: Literal["jsonl", "csv"] = "jsonl"
    content: str = Field(max_length=MAX_CONTENT, examples=['{"prompt": "2+2?", "answer": "4"}'])


def import_benchmark(ctx: Context, data: ImportIn | dict[str, Any]) -> Created:
    """Create a benchmark from a file; it counts against the creation limit like any other.

    Raises:
        PermissionDenied: the principal may not create benchmarks (checked before the file is
            read at all).
        InvalidInput: a line that cannot be read, or bad questions: each problem's `loc` is
            `["content", line, field…]`.
        RateLimited: as for `lifecycle.create_benchmark`.
    """
    # Reading the file costs CPU and memory: someone who may not create gets nothing parsed.
    access.require(ctx, Action.BENCHMARK_CREATE)
    spec = parse(ImportIn, data)
    _require_within_limit(ctx, "content", len(spec.content.encode("utf-8", "surrogatepass")))
    reader = _jsonl if spec.content_format == "jsonl" else _csv
    try:
        # A leading byte-order mark (Excel's "CSV UTF-8") is no text: the file route drops it.
        rows = reader(spec.content.removeprefix("\ufeff"))
    except InvalidInput as exc:
        raise _with_title(spec.title, exc) from None
    body = {
        "title": spec.title,
        "format": spec.format,
        "description": spec.description,
        "questions": [question for _, question in rows],
    }
    numbers = [number for number, _ in rows]
    try:
        created = lifecycle.create_benchmark(ctx, body)
    except InvalidInput as exc:
        raise _by_row(exc, numbers, spec.content_format, "content") from None
    return _warned_by_row(created, numbers, "content")


class FileImportIn(BaseModel):
    """How to read an uploaded file of questions: its type, a preset and a field mapping.

    `file_format` auto: by the file's name (.csv, .tsv, .parquet, .arrow, else JSONL, or a JSON
    file holding one array of objects), or by its first bytes; csv reads a file named .tsv with
    tabs. `hf` reads a Hugging Face `datasets` data file (Arrow, Parquet or JSON lines).
    `format` qa or mcq; unset, mcq when any row has choices (a row without is then refused)."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    title: str = Field(max_length=MAX_TITLE, examples=["Imported capitals"])  # see _with_title
    format: Literal["qa", "mcq"] | None = None
    description: Text = Field("", max_length=MAX_DESCRIPTION)
    file_format: file_rows.FileFormat = "auto"
    preset: Preset = "none"
    mapping: FieldMap = Field(default_factory=FieldMap)


def _require_within_limit(ctx: Context, field: str, size: int) -> None:
    """The deployment's import limit holds at every door, not only the API's body limit (the
    CLI's `--as` and the web form read the file here too)."""
    limit = ctx.settings.max_import_bytes
    if size > limit:
        raise invalid([field], f"is larger than {limit} bytes (BENCHGEN_MAX_IMPORT_BYTES)")


def import_file(
    ctx: Context, data: bytes, filename: str, spec: FileImportIn | dict[str, Any]
) -> Created:
    """Create a benchmark from an uploaded file through a field mapping; it counts against the
    creation limit like any other. Nothing is stored unless every row is valid.

    Raises:
        PermissionDenied: the principal may not create benchmarks (checked before the file is
            read at all).
        InvalidInput: the file cannot be read, or rows are wrong: each problem's `loc` is
            `["file", line or row number, field]`.
        RateLimited: as for `lifecycle.create_benchmark`.
    """
    # Reading the file costs CPU and memory: someone who may not create gets nothing parsed.
    access.require(ctx, Action.BENCHMARK_CREATE)
    settings = parse(FileImportIn, spec)
    _require_within_limit(ctx, "file", len(data))
    kind = file_rows.file_kind(settings.file_format, filename, data)
    try:
        rows, fmt, questions = _read(settings, data, kind)
    except InvalidInput as exc:
        raise _with_title(settings.title, exc) from None
    body = {
        "title": settings.title,
        "format": fmt,
        "description": settings.description,
        "questions": questions,
    }
    numbers = [number for number, _ in rows]
    try:
        created = lifecycle.create_benchmark(ctx, body)
    except InvalidInput as exc:
        raise _by_row(exc, numbers, kind) from None
    return _warned_by_row(created, numbers)


def _read(
    settings: FileImportIn, data: bytes, kind: str
) -> tuple[list[tuple[int, dict[str, Any]]], str, list[dict[str, Any]]]:
    """The file's rows, the benchmark's format and its questions."""
    rows, unreadable = file_rows.rows_and_problems(kind, data)
    if not rows:
        raise invalid(["file"], "has no rows")
    if len(rows) > MAX_QUESTIONS:
        raise invalid(["file"], f"at most {MAX_QUESTIONS} questions ({len(rows)} rows)")
    fmt, questions = _mapped(settings, rows, kind, unreadable)
    return rows, fmt, questions


def _with_title(title: str, exc: InvalidInput) -> InvalidInput:
    """`exc`, a file that could not be read into questions, with the title's problems first:
    the title is checked with the questions (`lifecycle.check_new`), which a file that fails
    to read never reaches, and one reply lists every problem."""
    problems = lifecycle.title_problems(title)
    return invalid_all([*problems, *exc.errors]) if problems else exc


def _mapped(
    settings: FileImportIn,
    rows: list[tuple[int, dict[str, Any]]],
    kind: str,
    unreadable: list[dict[str, Any]],
) -> tuple[str, list[dict[str, Any]]]:
    """The benchmark's format and its questions; every row's problems at once, with the
    `unreadable` lines'."""
    flat = kind in file_rows.DELIMITERS
    try:
        fields, forced_mcq = mapping.resolve(settings.preset, settings.mapping, rows[0][1], flat)
    except RowProblem as problem:
        raise invalid([problem.field], problem.message) from None
    _require_mapped(fields, rows, kind)
    file_rows.require_columns(
        kind, rows[0][1], [name for name in (fields.prompt, fields.answer) if name]
    )
    # Any row, not the first alone: read as qa, a later row's choices were dropped unsaid.
    fmt = settings.format or (
        "mcq" if forced_mcq or any(mapping.has_choices(fields, row) for _, row in rows) else "qa"
    )
    questions, problems = [], []
    for number, row in rows:
        try:
            questions.append(mapping.to_question(fields, row, fmt, flat))
        except RowProblem as problem:
            problems.append({"loc": ["file", number, problem.field], "msg": problem.message})
            if len(problems) >= file_rows.MAX_ROW_PROBLEMS:
                break
    if problems or unreadable:
        raise file_rows.summary(file_rows.with_unreadable(problems, unreadable), kind)
    return fmt, questions


# Fields datasets commonly hold a question's parts in, by the part they would be mapped to.
_LIKELY = {
    "prompt": ("question", "input", "query", "problem", "instruction", "text"),
    "answer": ("answers", "target", "output", "label", "solution", "expected", "gold"),
}


def _require_mapped(fields: FieldMap, rows: list[tuple[int, dict[str, Any]]], kind: str) -> None:
    """Refuse once, naming the mapping that would read the file, one whose rows never hold the
    prompt or answer field: `{"question": …, "answer": …}` lines each got "the field 'prompt'
    is missing", a hundred of them, and no word of `--map`. A CSV header with no field to map
    is left to `file_rows.require_columns`, which says more about headers.

    Raises:
        InvalidInput: at the first row's line (a CSV's header's).
    """
    flat = kind in file_rows.DELIMITERS
    wanted = {"prompt": fields.prompt, "answer": fields.answer}
    missing = [
        part for part, name in wanted.items() if name and all(name not in r for _, r in rows)
    ]
    line, first = rows[0]
    line = 1 if flat else line  # a CSV's fields are named by its header
    guesses = {
        part: next((name for name in _LIKELY[part] if name in first), None) for part in missing
    }
    named = [f"{part}={name}" for part, name in guesses.items() if name]
    if not missing or (flat and not named):
        return
    lacking = " and ".join(repr(wanted[part]) for part in missing)
    # Cut short: a hostile file's field names may be a hundred thousand characters long.
    has = (", ".join(repr(name) for name in list(first)[:20]) or "no fields")[:300]
    if named:
        mapping = ", ".join(f'"{p}": "{n}"' for p, n in guesses.items() if n)
        how = f'map them: "mapping": {{{mapping}}} (CLI: --map {" --map ".join(named)})'
    else:
        part = missing[0]
        how = f'map one of them: "mapping": {{"{part}": "FIELD"}} (CLI: --map {part}=FIELD)'
    said = f"no row has the field {lacking}; rows have {has}: {how}"
    raise file_rows.summary([{"loc": ["file", line], "msg": said}], kind)


def _by_row(exc: InvalidInput, numbers: list[int], kind: str, field: str = "file") -> InvalidInput:
    """Validation's places (`questions.3.answer`) as the file's (`file`, line 5, `answer`)."""
    problems = _rows_placed(exc.errors, numbers, field)
    return file_rows.summary(problems, kind) if problems else exc


def _warned_by_row(created: Created, numbers: list[int], field: str = "file") -> Created:
    """`created` with its warnings placed by line or row, as a refusal's problems are."""
    return replace(created, warnings=_rows_placed(created.warnings, numbers, field))


def _rows_placed(
    problems: list[dict[str, Any]], numbers: list[int], field: str
) -> list[dict[str, Any]]:
    placed = []
    for problem in problems:
        loc = list(problem.get("loc", []))
        if loc[:1] == ["questions"] and len(loc) >= 2 and isinstance(loc[1], int):
            loc = [field, numbers[loc[1]], *loc[2:]]
        placed.append({**problem, "loc": loc})
    return placed


def _jsonl(content: str) -> list[tuple[int, dict[str, Any]]]:
    return file_rows.jsonl_rows(content, "content")


def _csv(content: str) -> list[tuple[int, dict[str, Any]]]:
    """Each CSV record as a question, with the line it ends on.

    Raises:
        InvalidInput: rows whose choices leave a gap (loc `["content", line, "choices"]`).
    """
    records = file_rows.csv_records(content, "content", ("prompt", "answer"))
    names = mapping.flat_choice_columns(records[0][1]) if records else []
    rows, problems = [], []
    for number, row in records:
        try:
            rows.append((number, _question(row, names)))
        except RowProblem as problem:
            problems.append({"loc": ["content", number, problem.field], "msg": problem.message})
    if problems:
        raise file_rows.summary(problems[: file_rows.MAX_ROW_PROBLEMS], "csv")
    return rows


def _question(row: dict[str, Any], choice_names: list[str]) -> dict[str, Any]:
    question: dict[str, Any] = {
        "prompt": row["prompt"] or "",
        "answer": [part for part in (row["answer"] or "").split("|") if part.strip()],
        "tags": [tag for tag in (row.get("tags") or "").split(";") if tag.strip()],
    }
    choices = mapping.choice_cells(choice_names, row)
    if choices:
        question["choices"] = choices
        question["answer"] = (row["answer"] or "").strip()
    return question
