"""The check that a proposal's benchmark is still the version (and title) its preview showed."""

from __future__ import annotations

from typing import Any

from benchgen.core.context import Context
from benchgen.core.errors import Conflict
from benchgen.core.permissions import Action
from benchgen.services import access


def require_version(ctx: Context, arguments: dict[str, Any], action: Action) -> None:
    """Refuse when the benchmark changed since the preview: what was shown must be what runs.

    Raises:
        NotFound: the benchmark is no longer visible to the principal.
        PermissionDenied: the principal may not do `action` on it.
        Conflict: its questions, or the title or "before" values bound into `arguments`,
            changed after the preview.
    """
    row = access.require_benchmark(ctx, arguments["benchmark_id"], action)
    if row.version != arguments["version"]:
        raise Conflict(
            f"The benchmark's questions changed after the preview (version "
            f"{arguments['version']}, now {row.version}); nothing was done.",
            {"id": row.id, "version": row.version},
        )
    # A publish binds the title (its preview names the benchmark everyone will see), an edit
    # the values its diff showed as "before"; proposals made before they did lack the keys.
    shown = {"title": arguments["title"]} if "title" in arguments else {}
    for name, value in {**shown, **arguments.get("before", {})}.items():
        now = getattr(row, name)
        if now != value:
            raise Conflict(
                f"The benchmark's {name} changed after the preview (from {value!r} to "
                f"{now!r}); nothing was done.",
                {"id": row.id, name: now},
            )


def hold_version(
    ctx: Context, arguments: dict[str, Any], action: Action, exclusive: bool = True
) -> None:
    """`require_version` under the benchmark's row lock, held until the unit of work ends: on
    PostgreSQL a change committed between a check made before the lock and the write was
    overwritten unseen, or (a run) started on questions no preview showed.

    Raises:
        As `require_version`.
    """
    access.require_held(ctx, arguments["benchmark_id"], action, exclusive)
    require_version(ctx, arguments, action)
