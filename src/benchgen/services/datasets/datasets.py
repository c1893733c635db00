"""Datasets: upload a file of training rows (chat JSONL, prompt/completion JSONL or CSV, Parquet
through a field mapping), list and read one's own, delete in the web app."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import event, select
from sqlalchemy.orm import Session

from benchgen.core.context import Context
from benchgen.core.errors import Conflict, NotFound, PermissionDenied, invalid
from benchgen.core.ids import new_id
from benchgen.core.permissions import Action
from benchgen.core.statuses import TRAINING_ACTIVE
from benchgen.core.text import MAX_TITLE
from benchgen.db.tables import Dataset, TrainingJob
from benchgen.services import access, audit
from benchgen.services._artifacts import store_for
from benchgen.services.benchmarks import file_rows
from benchgen.services.benchmarks.mapping import RowProblem
from benchgen.services.datasets import _dataset_rows
from benchgen.services.datasets._dataset_rows import DatasetMapping, Shape
from benchgen.services.keysets import Newest, newest_first
from benchgen.services.specs import MAX_LIST, Title, check_window, parse

DatasetFormat = Literal["auto", "chat", "prompt_completion", "csv", "parquet"]
MAX_ROWS = 1_000_000
PREVIEW_ROWS = 5
Lock = bool | dict[str, bool]  # a row lock as `Session.get(with_for_update=…)` takes it
# What each chosen format reads the bytes as; auto goes by the file's name and first bytes.
_FILE_KINDS: dict[str, file_rows.FileFormat] = {
    "auto": "auto",
    "chat": "jsonl",
    "prompt_completion": "jsonl",
    "csv": "csv",
    "parquet": "parquet",
}


def _file_format(chosen: str, filename: str) -> file_rows.FileFormat:
    # auto goes by the name first: a .parquet file that is not Parquet is reported as such,
    # not as a JSON-lines file with a bad first line.
    if chosen == "auto" and filename.lower().endswith(".parquet"):
        return "parquet"
    return _FILE_KINDS[chosen]


def _require_readable_as(chosen: str, kind: str, filename: str, data: bytes) -> None:
    """Refuse a file of another kind than the chosen format reads: read as text, a Parquet
    file is "binary data" and a CSV file fails at line 1 as JSON, and neither says that the
    format is what is wrong.

    Raises:
        InvalidInput: at `["format"]`, naming the kind the file is.
    """
    if chosen == "auto":
        return
    found = file_rows.file_kind("auto", "", data)  # by its first bytes alone
    if found in ("parquet", "arrow") and kind != found:
        better = "auto" if found == "arrow" else "parquet or auto"
        raise invalid(["format"], f"{chosen} cannot read this {found} file: choose {better}")
    # JSON lines open with "{": a file named .csv that does not is the CSV its name says.
    named = file_rows.file_kind("auto", filename, data)
    if kind == "jsonl" and named in file_rows.DELIMITERS and not _opens_object(data):
        raise invalid(
            ["format"],
            f"{chosen} reads JSON lines, but this is a {named.upper()} file: choose csv or auto",
        )


def _opens_object(data: bytes) -> bool:
    return data.removeprefix(b"\xef\xbb\xbf").lstrip().startswith(b"{")


class DatasetIn(BaseModel):
    """How to read an uploaded dataset. `format` chat or prompt_completion: JSON lines of
    `{"messages": [{"role", "content"}, …]}` or `{"prompt", "completion"}`, each key once;
    csv: a header with `prompt` and `completion`, each column once (tabs in a file named .tsv);
    parquet: columns named so, or mapped; auto: by the file's name and first bytes, then by the
    first row's fields. Text files are UTF-8."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    name: Title = Field(max_length=MAX_TITLE, examples=["Support replies"])
    format: DatasetFormat = "auto"
    mapping: DatasetMapping = Field(default_factory=DatasetMapping)


@dataclass(frozen=True)
class DatasetView:
    """A dataset as its owner sees it. `token_estimate` is characters / 4 (no tokenizer);
    `size` and `sha256` are of the stored normalised JSON lines."""

    id: str
    name: str
    format: Shape
    source_format: str
    row_count: int
    token_estimate: int
    size: int
    sha256: str
    preview: list[dict[str, Any]]
    created_at: datetime


def upload_dataset(
    ctx: Context, data: bytes, filename: str, spec: DatasetIn | dict[str, Any]
) -> DatasetView:
    """Store a dataset from an uploaded file; nothing is stored unless every row is valid.

    Raises:
        PermissionDenied: a token without the train scope (checked before the file is read).
        InvalidInput: a mapping of fields the chosen format or the other mapped fields
            rule out (at mapping), a file of another kind than the chosen format reads (at
            format), too large, unreadable (not UTF-8: at its first bad byte's line), a CSV
            header that names a column twice or lacks one the format needs (at line 1), or
            rows that are wrong: each problem's `loc` is `["file", line or row number, field]`.
    """
    # Reading the file costs CPU and memory: someone who may not upload gets nothing parsed.
    access.require(ctx, Action.DATASET_CREATE)
    settings = parse(DatasetIn, spec)
    _dataset_rows.require_one_shape(settings.format, settings.mapping)
    limit = ctx.settings.max_dataset_bytes
    if len(data) > limit:
        raise invalid(["file"], f"is larger than {limit} bytes (BENCHGEN_MAX_DATASET_BYTES)")
    kind = file_rows.file_kind(_file_format(settings.format, filename), filename, data)
    _require_readable_as(settings.format, kind, filename, data)
    rows, unreadable = file_rows.rows_and_problems(kind, data, MAX_ROWS)
    if not rows:
        raise invalid(["file"], "has no rows")
    if len(rows) > MAX_ROWS:
        raise invalid(["file"], f"at most {MAX_ROWS} rows ({len(rows)})")
    shape = _dataset_rows.shape_of(settings.format, settings.mapping, rows[0][1])
    # A CSV row's keys are its header's columns: what the shape needs is checked once there.
    file_rows.require_columns(kind, rows[0][1], _dataset_rows.columns(shape, settings.mapping))
    records = _records(shape, settings.mapping, rows, kind, unreadable)
    return _store(ctx, settings.name, shape, kind, records)


def _records(
    shape: Shape,
    fields: DatasetMapping,
    rows: list[tuple[int, dict[str, Any]]],
    kind: str,
    unreadable: list[dict[str, Any]],
) -> list[dict[str, Any]]:
    """Every row as a record, or every row's problem at once with the `unreadable` lines' (up
    to a hundred)."""
    records, problems = [], []
    for number, row in rows:
        try:
            records.append(_dataset_rows.record(shape, fields, row))
        except RowProblem as problem:
            problems.append({"loc": _loc(number, problem.field), "msg": problem.message})
            if len(problems) >= file_rows.MAX_ROW_PROBLEMS:
                break
    if problems or unreadable:
        raise file_rows.summary(file_rows.with_unreadable(problems, unreadable), kind)
    return records


def _loc(number: int, field: str) -> list[str | int]:
    """`["file", 3, "messages", 0, "role"]` for the field `messages.0.role` on line 3."""
    return ["file", number, *(int(p) if p.isdigit() else p for p in field.split("."))]


def _store(
    ctx: Context, name: str, shape: Shape, kind: str, records: list[dict[str, Any]]
) -> DatasetView:
    owner = ctx.principal.user_id
    assert owner is not None  # dataset.create is granted to users only
    content = b"".join(json.dumps(item, ensure_ascii=False).encode() + b"\n" for item in records)
    dataset_id = new_id("ds")
    key = f"datasets/{dataset_id}/data.jsonl"
    sizes = [_dataset_rows.token_estimate(item) for item in records]
    # Written before the row commits: a rolled-back request leaves an orphan file, never a row
    # pointing at nothing.
    store_for(ctx.settings).put_bytes(key, content)
    row = Dataset(
        id=dataset_id,
        owner_id=owner,
        name=name,
        format=shape,
        source_format=kind,
        row_count=len(records),
        token_estimate=sum(sizes),
        longest_row_tokens=max(sizes),
        size=len(content),
        sha256=hashlib.sha256(content).hexdigest(),
        storage_key=key,
        preview=[_dataset_rows.preview_row(item) for item in records[:PREVIEW_ROWS]],
        created_at=ctx.now(),
    )
    ctx.session.add(row)
    audit.record(ctx, audit.AuditAction.DATASET_CREATE, "dataset", row.id, rows=row.row_count)
    return view(row)


def list_datasets(ctx: Context, limit: int = 50, after: Newest | None = None) -> list[DatasetView]:
    """The acting user's datasets, newest first; after the one keyed `after` when given.

    Raises:
        PermissionDenied: the principal may not read datasets (the operator acts --as a user).
        InvalidInput: limit outside 1..MAX_LIST.
    """
    access.require(ctx, Action.DATASET_READ)
    check_window(limit, 0, MAX_LIST)
    query = newest_first(
        select(Dataset).where(
            Dataset.owner_id == ctx.principal.user_id, Dataset.deleted_at.is_(None)
        ),
        Dataset.created_at,
        Dataset.id,
        after,
    )
    return [view(row) for row in ctx.session.scalars(query.limit(limit))]


def get_dataset(ctx: Context, dataset_id: str) -> DatasetView:
    """One of the acting user's datasets.

    Raises:
        PermissionDenied: the principal may not read datasets.
        NotFound: missing, deleted, or someone else's (which is never revealed).
    """
    access.require(ctx, Action.DATASET_READ)
    return view(_own(ctx, dataset_id))


def dataset_records(ctx: Context, dataset_id: str) -> list[dict[str, Any]]:
    """The stored normalised records of one of the user's datasets, in upload order.

    Raises:
        PermissionDenied: the principal may not read datasets.
        NotFound: missing, deleted, or someone else's.
    """
    access.require(ctx, Action.DATASET_READ)
    content = store_for(ctx.settings).read_bytes(_own(ctx, dataset_id).storage_key)
    return [json.loads(line) for line in content.decode().split("\n") if line]


def dataset_for_training(ctx: Context, dataset_id: str) -> Dataset:
    """One of the user's datasets, to train on.

    Raises:
        PermissionDenied: the principal may not launch training.
        NotFound: missing, deleted, or someone else's.
    """
    access.require(ctx, Action.TRAINING_LAUNCH)
    # Shared with other launches, exclusive of a deletion (`delete_dataset`): a deletion that
    # read "no job uses it" before this launch committed would leave a job with no data.
    return _own(ctx, dataset_id, {"read": True})


def delete_dataset(ctx: Context, dataset_id: str) -> None:
    """Delete one of the user's datasets and its stored file (web app or CLI only).

    Raises:
        PermissionDenied: a token or the agent asked (the refusal names the dataset's page).
        NotFound: missing, deleted, or someone else's.
        Conflict: a queued or running training job is using it.
    """
    try:
        access.require(ctx, Action.DATASET_DELETE)
    except PermissionDenied as exc:
        # The user's own dataset: the refusal links to the page where they can delete it.
        if exc.details.get("page") and _owned(ctx, dataset_id) is not None:
            exc.details["page"] = f"/datasets/{dataset_id}"
        raise
    row = _own(ctx, dataset_id, True)
    training = ctx.session.scalar(
        select(TrainingJob.id).where(
            TrainingJob.dataset_id == row.id, TrainingJob.status.in_(TRAINING_ACTIVE)
        )
    )
    if training is not None:
        # Its file is what the job reads when a worker starts or resumes it.
        raise Conflict(
            f"A training job ({training}) is using this dataset: cancel it or let it finish first.",
            {"training_job_id": training, "page": f"/training/{training}"},
        )
    row.deleted_at = ctx.now()
    audit.record(ctx, audit.AuditAction.DATASET_DELETE, "dataset", row.id)
    store, key = store_for(ctx.settings), row.storage_key

    def remove_file(_: Session) -> None:
        store.delete(key)

    # Removed only once the deletion commits: a rolled-back request keeps a live row's file.
    event.listen(ctx.session, "after_commit", remove_file, once=True)


def _owned(ctx: Context, dataset_id: str, lock: Lock = False) -> Dataset | None:
    """The acting user's live dataset, read under `lock` (SQLAlchemy's `with_for_update`)."""
    row = ctx.session.get(Dataset, dataset_id, with_for_update=lock, populate_existing=bool(lock))
    live = row is not None and row.deleted_at is None
    return row if live and row is not None and row.owner_id == ctx.principal.user_id else None


def _own(ctx: Context, dataset_id: str, lock: Lock = False) -> Dataset:
    row = _owned(ctx, dataset_id, lock)
    if row is None:
        # Someone else's dataset is answered exactly like a missing one.
        raise NotFound("No such dataset.", {"id": dataset_id})
    return row


def view(row: Dataset) -> DatasetView:
    """The owner's view of a dataset row."""
    return DatasetView(
        id=row.id,
        name=row.name,
        format="chat" if row.format == "chat" else "prompt_completion",
        source_format=row.source_format,
        row_count=row.row_count,
        token_estimate=row.token_estimate,
        size=row.size,
        sha256=row.sha256,
        preview=list(row.preview),
        created_at=row.created_at,
    )
