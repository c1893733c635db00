"""`/api/v1/datasets`: upload training data (train scope), list and read your own."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, File, Form, Query, UploadFile

from benchgen.api.deps import ContextDep
from benchgen.api.errors import COMMON
from benchgen.api.files import read_upload
from benchgen.api.json_bodies import field_json
from benchgen.api.paging import Cursor, Keyset, newest, page
from benchgen.api.routing import OneThreadRoute
from benchgen.api.schemas import Page
from benchgen.services.datasets import datasets
from benchgen.services.datasets.datasets import DatasetFormat, DatasetView
from benchgen.services.keysets import Newest

router = APIRouter(
    prefix="/api/v1/datasets", tags=["datasets"], responses=COMMON, route_class=OneThreadRoute
)
# An uploaded dataset: the body limit allows its own size limit plus the multipart framing.
UPLOAD_PATH = router.prefix
DATASETS: Keyset[DatasetView, Newest] = newest("datasets", lambda row: (row.created_at, row.id))


@router.get("", response_model=Page[DatasetView], openapi_extra={"x-scope": "read"})
def list_datasets(
    ctx: ContextDep,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    cursor: Cursor = None,
) -> dict[str, Any]:
    """Your datasets, newest first."""
    return page(DATASETS, lambda n, after: datasets.list_datasets(ctx, n, after), cursor, limit)


@router.post("", status_code=201, response_model=DatasetView, openapi_extra={"x-scope": "train"})
def upload_dataset(
    ctx: ContextDep,
    file: Annotated[
        UploadFile, File(description="Chat or prompt/completion JSONL, CSV, or Parquet")
    ],
    name: Annotated[str, Form(max_length=200)],
    format: Annotated[DatasetFormat, Form()] = "auto",
    mapping: Annotated[
        str,
        Form(
            max_length=10_000,
            description='JSON, e.g. {"prompt": "question", "completion": "answer"}',
        ),
    ] = "{}",
) -> DatasetView:
    """Upload a dataset (at most BENCHGEN_MAX_DATASET_BYTES). Every row is checked: problems
    come back with their line or row number, and nothing is stored unless all rows are valid.
    The token estimate is characters / 4."""
    data = read_upload(file, "file", ctx.settings.max_dataset_bytes)
    spec = {"name": name, "format": format, "mapping": field_json(mapping, "mapping")}
    return datasets.upload_dataset(ctx, data, file.filename or "upload", spec)


@router.get("/{dataset_id}", response_model=DatasetView, openapi_extra={"x-scope": "read"})
def get_dataset(ctx: ContextDep, dataset_id: str) -> DatasetView:
    """One of your datasets with a preview of its first rows."""
    return datasets.get_dataset(ctx, dataset_id)
