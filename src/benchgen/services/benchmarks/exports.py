"""Benchmark export: JSONL, an Inspect AI task folder and an lm-evaluation-harness task folder."""

from __future__ import annotations

import io
import json
import re
import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

from benchgen.core.context import Context
from benchgen.core.errors import invalid
from benchgen.core.permissions import Action
from benchgen.evals.prompts import LABELS, render_prompt
from benchgen.evals.types import Item
from benchgen.services import access
from benchgen.services.benchmarks import _export_templates as templates
from benchgen.services.benchmarks import _question_store
from benchgen.services.benchmarks.questions import Canonical

ExportFormat = Literal["jsonl", "inspect", "lm_eval"]
FORMATS: tuple[ExportFormat, ...] = ("jsonl", "inspect", "lm_eval")
# Ids are made by BenchGen (`bm_` and letters/digits); checked anyway before one names a task in
# generated code, so no value from outside can ever reach the templates.
_SAFE_ID = re.compile(r"[A-Za-z0-9_]{1,64}")
_ZIP_DATE = (2020, 1, 1, 0, 0, 0)  # fixed: the same benchmark exports to the same bytes


@dataclass(frozen=True)
class Export:
    """An exported file: its name, media type and bytes."""

    filename: str
    media_type: str
    data: bytes


def export_benchmark(ctx: Context, benchmark_id: str, fmt: str) -> Export:
    """The benchmark with its answer key as a JSONL file or a zipped task folder.

    Raises:
        NotFound: no such benchmark, or not visible to the principal.
        PermissionDenied: visible, but the principal may not see its key (owner and
            collaborators only).
        InvalidInput: an unknown format, or a custom (bundle) benchmark, which has no
            questions to export.
    """
    row = access.require_benchmark(ctx, benchmark_id, Action.BENCHMARK_READ_KEY)
    if fmt not in FORMATS:
        raise invalid(["format"], f"must be one of {', '.join(FORMATS)}")
    _exportable(row.format)
    # One query: the questions as one snapshot, even while someone edits them.
    questions = _question_store.load_canonical(ctx, benchmark_id)
    if fmt == "jsonl":
        return Export(f"{row.id}.jsonl", "application/x-ndjson", _jsonl(questions))
    name = task_name(row.id)
    # Made a row at a time as the zip takes them: all rows at once, then their text, its bytes
    # and the text again held the largest benchmarks eleven times over (338 MB for 30 MB).
    dataset = (_dataset_row(position, question) for position, question in enumerate(questions))
    if fmt == "inspect":
        files = {
            "task.py": templates.INSPECT_TASK.format(name=name, fmt=_exportable(row.format)),
            "README.md": templates.INSPECT_README,
        }
    else:
        files = {
            "task.yaml": _lm_eval_yaml(name, row.format),
            "README.md": templates.LM_EVAL_README,
        }
    return Export(f"{name}_{fmt}.zip", "application/zip", _zip(name, files, dataset))


def task_name(benchmark_id: str) -> str:
    """The task's name in the peer tools: from the id, never the title.

    Raises:
        InvalidInput: the id is not BenchGen's shape (it never is; this guards the templates).
    """
    if not _SAFE_ID.fullmatch(benchmark_id):
        raise invalid(["benchmark_id"], "cannot name a task: letters, digits and _ only")
    return f"benchgen_{benchmark_id.lower()}"


def _exportable(fmt: str) -> str:
    """`fmt`, a benchmark's format, when its questions can be exported.

    Raises:
        InvalidInput: a custom (bundle) benchmark, which has no questions to export.
    """
    if fmt not in ("qa", "mcq"):
        # The benchmark named is the problem, not the export format asked for.
        raise invalid(
            ["benchmark_id"], "a custom benchmark: only qa and mcq ones export; download its bundle"
        )
    return fmt


def _lm_eval_yaml(name: str, fmt: str) -> str:
    mcq = _exportable(fmt) == "mcq"
    return templates.LM_EVAL_TASK.format(
        name=name,
        answer=templates.LM_EVAL_MCQ if mcq else templates.LM_EVAL_QA,
        pattern=templates.LM_EVAL_MCQ_PATTERN if mcq else templates.LM_EVAL_QA_PATTERN,
        ignore_punctuation="false" if mcq else "true",
    )


def _jsonl(questions: list[Canonical]) -> bytes:
    """One question a line, in the shape the JSONL import reads back."""
    return b"".join(_lines(_import_row(question) for question in questions))


def _import_row(question: Canonical) -> dict[str, Any]:
    row: dict[str, Any] = {"prompt": question.prompt}
    if question.choices is not None:
        row["choices"] = list(question.choices)
        row["answer"] = question.answers[0]
    else:
        row["answer"] = list(question.answers)
    row["tags"] = list(question.tags)
    row["metadata"] = json.loads(question.metadata)
    return row


def _dataset_row(position: int, question: Canonical) -> dict[str, Any]:
    """One line of a task folder's dataset.jsonl: fixed field names the templates read."""
    text = render_prompt(_item(position, question))
    row: dict[str, Any] = {"id": f"q{position + 1}", "prompt": question.prompt, "text": text}
    if question.choices is not None:
        letter = question.answers[0]
        row |= {
            "input": question.prompt,
            "choices": list(question.choices),
            "target": letter,
            "answer_index": LABELS.index(letter),
            "labels": list(LABELS[: len(question.choices)]),
        }
    else:
        # Inspect sends `input` as is: for free answers it carries BenchGen's instruction.
        row |= {"input": text, "target": list(question.answers), "answers": list(question.answers)}
    row |= {"tags": list(question.tags), "metadata": json.loads(question.metadata)}
    return row


def _item(position: int, question: Canonical) -> Item:
    return Item(index=position, prompt=question.prompt, choices=question.choices)


def _lines(rows: Iterable[dict[str, Any]]) -> Iterator[bytes]:
    """Each row as a line of JSON, made as it is asked for."""
    for row in rows:
        # ensure_ascii: U+2028 and friends stay escaped, so no reader splits a line in a string.
        yield (json.dumps(row, ensure_ascii=True) + "\n").encode()


def _zip(folder: str, files: dict[str, str], dataset: Iterable[dict[str, Any]]) -> bytes:
    """The task folder zipped, `dataset.jsonl` written into it line by line."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in files.items():
            archive.writestr(_entry(folder, name), content, compress_type=zipfile.ZIP_DEFLATED)
        with archive.open(_entry(folder, "dataset.jsonl"), "w") as entry:
            for line in _lines(dataset):
                entry.write(line)
    return buffer.getvalue()


def _entry(folder: str, name: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(f"{folder}/{name}", _ZIP_DATE)
    info.compress_type = zipfile.ZIP_DEFLATED
    return info
