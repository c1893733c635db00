"""The `change_bundle` proposal kind: a conversation's scratch copy proposed as a benchmark's next
bundle version, checked in a read, its programs run with no unit of work open, then stored.

A bundle's programs run for seconds to minutes, and on SQLite a write transaction holds the lock
of the whole database: so previewing and carrying out are each split as the upload doors are
(`bundles.check_bundle`), and every rule is checked again in the short write that stores."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from benchgen.core.context import Context
from benchgen.core.errors import Conflict
from benchgen.core.permissions import Action
from benchgen.db.tables import ScratchCopy
from benchgen.services import access
from benchgen.services.benchmarks import bundles
from benchgen.services.chat import previews, scratch
from benchgen.services.chat._versions import hold_version, require_version
from benchgen.services.specs import parse

FILENAME = "scratch.zip"


class BundleArgs(BaseModel):
    """Arguments of a `change_bundle` proposal: the scratch copy of one conversation."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    benchmark_id: str = Field(max_length=40)
    conversation_id: str = Field(max_length=40)


def check(ctx: Context, arguments: dict[str, Any]) -> bundles.BundleCheck:
    """The guards of `prepare` that come before the scratch bundle's programs, in a unit of work
    that only reads: nothing runs for a copy that may not, or need not, be proposed.

    Raises:
        InvalidInput: bad arguments.
        NotFound: no such benchmark, conversation or scratch copy visible.
        PermissionDenied: the principal may not edit the benchmark.
        Conflict: the scratch copy is the same as the current bundle.
    """
    spec = parse(BundleArgs, arguments)
    row = access.require_benchmark(ctx, spec.benchmark_id, Action.BENCHMARK_EDIT)
    copy, data, _ = scratch.scratch_for_change(ctx, spec.conversation_id, row.id)
    _changes(ctx, copy, data)
    return bundles.check_bundle(ctx, data, FILENAME, row.id)


def prepare(
    ctx: Context, arguments: dict[str, Any], checked: bundles.Checked
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The canonical arguments and preview of the scratch copy that `checked` inspected (its
    solutions scored), with every rule checked again now; nothing is written.

    Raises:
        InvalidInput: bad arguments.
        NotFound: no such benchmark, conversation or scratch copy visible.
        PermissionDenied: the principal may not edit the benchmark, or the bundle adds or
            removes phases or tasks (done in the web app).
        Conflict: the scratch copy changed while its programs ran, or it is the same as the
            current bundle.
    """
    spec = parse(BundleArgs, arguments)
    row = access.require_benchmark(ctx, spec.benchmark_id, Action.BENCHMARK_EDIT)
    copy, data, sha256 = scratch.scratch_for_change(ctx, spec.conversation_id, row.id)
    inspected = checked.inspected
    if inspected.sha256 != sha256:
        # The preview must show what the hash binds: solutions scored on other bytes would not.
        raise Conflict(
            "The scratch copy changed while its programs ran; nothing was proposed. "
            "Propose it again.",
            {"checked": inspected.sha256, "now": sha256},
        )
    bundles.require_structure_allowed(ctx, row, inspected.competition)
    preview = {
        "benchmark_id": row.id,
        "title": row.title,
        "sha256": sha256,
        "solutions": inspected.solutions,
        "warnings": [w.as_error() for w in inspected.competition.warnings],
        **_changes(ctx, copy, data),
    }
    preview["text"] = previews.bundle_text(preview)
    # The hash binds approval to these exact bytes; execution rebuilds and compares (A9).
    canonical = {**spec.model_dump(), "sha256": sha256, "version": row.version}
    return canonical, preview


def check_perform(ctx: Context, arguments: dict[str, Any]) -> bundles.BundleCheck:
    """The guards of `perform` that come before the programs run, in a unit of work that only
    reads: the approved bytes are the ones inspected, or nothing is.

    Raises:
        NotFound: the benchmark, conversation or scratch copy is no longer visible.
        PermissionDenied: the principal may no longer edit the benchmark.
        Conflict: the benchmark or the scratch copy changed after the preview.
    """
    require_version(ctx, arguments, Action.BENCHMARK_EDIT)
    data = _approved_bytes(ctx, arguments)
    return bundles.check_bundle(ctx, data, FILENAME, arguments["benchmark_id"])


def perform(ctx: Context, arguments: dict[str, Any], checked: bundles.Checked) -> dict[str, Any]:
    """Upload the approved scratch bytes, which `checked` inspected, as the next version;
    `bundles.upload_bundle_version` checks every rule again now.

    Raises:
        BenchGenError: whatever `bundles.upload_bundle_version` raises.
        Conflict: the benchmark or the scratch copy changed after the preview.
    """
    hold_version(ctx, arguments, Action.BENCHMARK_EDIT)
    benchmark_id = arguments["benchmark_id"]
    data = _approved_bytes(ctx, arguments)
    view = bundles.upload_bundle_version(ctx, benchmark_id, data, FILENAME, checked)
    return {"benchmark_id": benchmark_id, "version": view.version}


def _approved_bytes(ctx: Context, arguments: dict[str, Any]) -> bytes:
    """The scratch bundle, which must still be the bytes whose hash was approved (A9).

    Raises:
        NotFound: no such scratch copy.
        Conflict: the scratch copy changed after the preview.
    """
    benchmark_id = arguments["benchmark_id"]
    _, data, sha256 = scratch.scratch_for_change(ctx, arguments["conversation_id"], benchmark_id)
    if sha256 != arguments["sha256"]:
        raise Conflict(
            "The scratch copy changed after the preview; nothing was uploaded. Propose it again.",
            {"approved": arguments["sha256"], "now": sha256},
        )
    return data


def _changes(ctx: Context, copy: ScratchCopy, data: bytes) -> dict[str, Any]:
    """What the scratch bundle changes against the current one.

    Raises:
        Conflict: nothing: there is nothing to approve.
    """
    changes = scratch.diff_against_current(ctx, copy, data)
    if not changes["diff"] and not changes["binary_changes"]:
        raise Conflict("The scratch copy is the same as the current bundle: nothing to approve.")
    return changes
