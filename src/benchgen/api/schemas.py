"""Response shapes of the API that services do not already define (their views are reused)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, Field

from benchgen.services.benchmarks import BenchmarkView, ChangePreview

Item = TypeVar("Item")


class Page(BaseModel, Generic[Item]):
    """Every list: the items and a cursor for the next page (null at the end)."""

    items: list[Item]
    next_cursor: str | None = None


class Me(BaseModel):
    """The token's user, balance, scopes and expiry."""

    id: str
    email: str
    display_name: str
    credits: int
    scopes: list[str]
    token_id: str | None
    token_expires_at: datetime | None


class CreatedBenchmark(BaseModel):
    """A new benchmark and the warnings found on the way (duplicates: not errors)."""

    benchmark: BenchmarkView
    warnings: list[dict[str, Any]]


class EditedBenchmark(BaseModel):
    """The changed benchmark and what the change did."""

    benchmark: BenchmarkView
    change: ChangePreview


class StartRun(BaseModel):
    """Which model to run on which benchmark (phase: the first one unless given)."""

    benchmark_id: str = Field(examples=["bm_3kQ9xZ0aB1cD2eF3gH4i"])
    model_id: str = Field(examples=["mdl_builtin_first"])
    phase_id: str | None = None


class Question(BaseModel):
    """A question; `answer` only for the owner and collaborators."""

    position: int
    prompt: str
    choices: dict[str, str] | None = None
    answer: str | list[str] | None = None
    tags: list[str] = Field(default_factory=list)


class LogLine(BaseModel):
    """One line of a run's log."""

    id: int
    at: datetime
    line: str
