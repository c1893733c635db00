"""Entity tags of what a benchmark change may set, and the check that a change was made from
the state now (HTTP `If-Match`): two editors saving from two tabs no longer overwrite each other.

A tag is `"<questions version>-<digest of the title>-<digest of the description>"`: a rename is no
new version, yet it must make an older tag stale, and each part apart says what changed.
"""

from __future__ import annotations

import hashlib

from benchgen.core.context import Context
from benchgen.core.errors import Conflict
from benchgen.core.permissions import Action
from benchgen.db.tables import Benchmark
from benchgen.services import access

_DIGEST_CHARS = 12
_ANY = "*"
# What a change may set, in the order the tag names them.
_PARTS = ("questions", "title", "description")


class Stale(Conflict):
    """The benchmark changed since the state a change was made from: nothing was changed."""

    http_status = 412  # the status HTTP gives a failed If-Match


def tag_of(version: int, title: str, description: str) -> str:
    """The entity tag of this state, quotes included, as an `ETag` header carries it."""
    return f'"{version}-{_digest(title)}-{_digest(description)}"'


def current_tag(ctx: Context, benchmark_id: str) -> str:
    """The entity tag of the benchmark as it is now, for anyone who may read it.

    Raises:
        NotFound: not visible to the principal.
        PermissionDenied: the token lacks the read scope.
    """
    row = access.require_benchmark(ctx, benchmark_id, Action.BENCHMARK_READ)
    return tag_of(row.version, row.title, row.description)


def require_current(row: Benchmark, if_match: str) -> None:
    """Refuse a change unless `if_match` (an `If-Match` value: entity tags separated by commas,
    or `*`) names `row`'s state now. A `W/` before a tag is ignored: a proxy that compresses a
    reply weakens the tag it passes on, and this tag names the state, not the reply's bytes.

    Raises:
        Stale: no tag sent matches; the message and details say what changed since the first.
    """
    sent = [_opaque(part) for part in if_match.split(",") if part.strip()]
    now = tag_of(row.version, row.title, row.description)
    if _ANY in sent or _opaque(now) in sent:
        return
    version, changed = _changed(sent[0] if sent else "", row)
    raise Stale(
        f"The benchmark changed since the version this change was made from "
        f"({_in_words(changed, version, row.version)}); nothing was saved. Read it again (its "
        f"ETag is now {now}), apply the change to it and send it with that ETag in If-Match.",
        {
            "id": row.id,
            "changed": changed,
            "etag": now,
            "version": row.version,
            "title": row.title,
            "description": row.description,
        },
    )


def _changed(tag: str, row: Benchmark) -> tuple[int | None, list[str]]:
    """The questions version `tag` names and which of `questions`, `title` and `description`
    differ from `row`; (None, []) when `tag` is none of these tags (made up, or cut short)."""
    parts = tag.split("-")
    if len(parts) != 3 or not parts[0].isascii() or not parts[0].isdigit() or len(parts[0]) > 18:
        return None, []
    version = int(parts[0])
    texts = (row.title, row.description)
    differ = [
        version != row.version,
        *(_digest(t) != d for t, d in zip(texts, parts[1:], strict=True)),
    ]
    return version, [name for name, changed in zip(_PARTS, differ, strict=True) if changed]


def _in_words(changed: list[str], version: int | None, now: int) -> str:
    if not changed:
        return "If-Match names no state this benchmark had"
    said = {"questions": f"the questions (version {version} then, {now} now)"}
    words = [said.get(name, f"the {name}") for name in changed]
    return " and ".join(words) + " changed"


def _opaque(tag: str) -> str:
    """A tag without the `W/` of a weak one and without its quotes."""
    bare = tag.strip().removeprefix("W/")
    return bare[1:-1] if len(bare) >= 2 and bare[0] == bare[-1] == '"' else bare


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:_DIGEST_CHARS]
