"""One user's cache of model replies, unguarded (execution has required running the run): looked
up before asking, filled with the replies a cached run received."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select

from benchgen.core.context import Context
from benchgen.db.inserts import insert_new
from benchgen.db.tables import ResponseCacheEntry

_CHUNK = 500  # keys per lookup: well inside every backend's limit on bound parameters


@dataclass(frozen=True)
class Scope:
    """Whose cache, and what besides the prompt and sample decides a reply."""

    user_id: str
    asked: str  # JSON of the model's id, endpoint, base URL, params and the run's settings


def scope_for(user_id: str, model: dict[str, Any], settings: dict[str, Any]) -> Scope:
    """The cache scope of a run by `user_id` of `model` (its id, endpoint_model, base_url and
    params) with generation `settings`."""
    return Scope(user_id, json.dumps([model, settings], sort_keys=True, default=str))


def key_of(scope: Scope, prompt: str, sample: int) -> str:
    """SHA-256 of everything that decides the reply. The user is not in the key but in the
    row: entries are found only through the user's own id, so no user reads another's."""
    material = json.dumps([scope.asked, prompt, sample], ensure_ascii=False)
    return hashlib.sha256(material.encode("utf-8")).hexdigest()


def lookup(ctx: Context, scope: Scope, keys: list[str]) -> dict[str, str]:
    """The cached replies among `keys`, by key."""
    found: dict[str, str] = {}
    for start in range(0, len(keys), _CHUNK):
        rows = ctx.session.execute(
            select(ResponseCacheEntry.key, ResponseCacheEntry.reply).where(
                ResponseCacheEntry.user_id == scope.user_id,
                ResponseCacheEntry.key.in_(keys[start : start + _CHUNK]),
            )
        )
        found.update({key: reply for key, reply in rows})
    return found


def store(ctx: Context, scope: Scope, replies: Iterable[tuple[str, str, int]]) -> None:
    """Keep (key, reply, tokens) entries; a key already cached keeps its first reply (two runs
    of one user may fill the same key at once: the database decides, without an error)."""
    rows = [
        {
            "user_id": scope.user_id,
            "key": key,
            "reply": reply,
            "tokens": tokens,
            "created_at": ctx.now(),
        }
        for key, reply, tokens in replies
    ]
    if not rows:
        return
    ctx.session.execute(insert_new(ctx.session, ResponseCacheEntry, ["user_id", "key"]), rows)
