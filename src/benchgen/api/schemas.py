"""Response shapes of the API (request shapes are shared with services: `services.specs`)."""

from __future__ import annotations

from datetime import datetime
from typing import Generic, TypeVar

from pydantic import BaseModel

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


class BenchmarkOut(BaseModel):
    """A benchmark as the caller may see it."""

    id: str
    title: str
    description: str
    format: str
    visibility: str
    owner_id: str
    version: int
    question_count: int
    questions_frozen: bool
    created_at: datetime
    updated_at: datetime
    published_at: datetime | None
    roles: list[str]
    can_see_key: bool
