"""The agent's scratch copies of custom benchmarks (A16–A17): a bundle copied into space owned by
one conversation, read and changed there, and rescored against saved predictions locally —
nothing reaches the platform until the user approves the change as a new bundle version."""

from __future__ import annotations

import difflib
import hashlib
import io
import tempfile
import zipfile
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path, PurePosixPath
from typing import Any

from sqlalchemy import delete, select

from benchgen.bundles.archive import extract_zip
from benchgen.bundles.evaluation import (
    Submission,
    combine_scores,
    evaluate_task,
    scored_columns,
)
from benchgen.bundles.layout import ResolvedTask, load_bundle
from benchgen.core.context import Context
from benchgen.core.errors import Conflict, InvalidInput, NotFound, invalid
from benchgen.core.ids import new_id
from benchgen.core.permissions import Action
from benchgen.db.tables import Benchmark, Conversation, ScratchCopy
from benchgen.services import access
from benchgen.services._artifacts import ArtifactStore, store_for
from benchgen.services.benchmarks import _bundle_versions

MAX_FILE_BYTES = 1 << 20  # one file the agent writes
MAX_FILES = 2000
# A text file longer than this (either side) is named as changed, not diffed, and so is any
# past MAX_DIFFED_LINES in all: the diff's time grows with the square of the lines (a 1 MB
# file took hours), and it is made in the write that stores the proposal.
MAX_DIFF_LINES = 2000
MAX_DIFFED_LINES = 5000
RETENTION = timedelta(days=7)  # a scratch copy left untouched this long is removed
# Fixed zip metadata: the same files always make the same bytes, so a preview's hash holds.
_EPOCH = (1980, 1, 1, 0, 0, 0)


@dataclass(frozen=True)
class ScratchView:
    """A scratch copy: which benchmark and version it started from, and its files."""

    id: str
    benchmark_id: str
    base_version: int
    files: list[dict[str, Any]]


def open_scratch(ctx: Context, conversation_id: str, benchmark_id: str) -> ScratchView:
    """Copy the benchmark's current bundle into this conversation's scratch space (replacing an
    earlier copy of it). Only the benchmark's team may: the bundle holds its reference data.

    Raises:
        NotFound: the conversation is not the user's, or the benchmark is not visible.
        PermissionDenied: not the benchmark's owner or a collaborator.
        Conflict: not a custom benchmark.
    """
    conversation = _conversation(ctx, conversation_id)
    benchmark = _custom(ctx, benchmark_id)
    purge_expired(ctx)
    version = _bundle_versions.version_row(ctx, benchmark.id, None)
    store = store_for(ctx.settings)
    row = _find(ctx, conversation.id, benchmark.id)
    if row is None:
        row = ScratchCopy(
            id=new_id("scr"),
            conversation_id=conversation.id,
            user_id=conversation.user_id,
            benchmark_id=benchmark.id,
            created_at=ctx.now(),
        )
        ctx.session.add(row)
    store.delete_prefix(_prefix(row.id))
    row.base_version, row.updated_at = version.version, ctx.now()
    with tempfile.TemporaryDirectory(prefix="scratch-") as folder:
        root = Path(folder)
        extract_zip(
            store.read_bytes(version.storage_key),
            root,
            _bundle_versions.archive_limits(ctx.settings),
        )
        for path in sorted(p for p in root.rglob("*") if p.is_file()):
            store.put_file(_key(row.id, path.relative_to(root).as_posix()), path)
    ctx.session.flush()
    return _view(store, row)


def list_scratch(ctx: Context, conversation_id: str, benchmark_id: str) -> ScratchView:
    """The scratch copy's files.

    Raises:
        NotFound: no scratch copy of that benchmark in this conversation.
    """
    row = _scratch(ctx, conversation_id, benchmark_id)
    return _view(store_for(ctx.settings), row)


def read_scratch_file(ctx: Context, conversation_id: str, benchmark_id: str, path: str) -> str:
    """One file of the scratch copy, whole, as text (undecodable bytes replaced): the caller
    shows it a page at a time, and a cut file would read as ending where it was cut.

    Raises:
        NotFound: no such copy or file.
        InvalidInput: the path leaves the copy.
    """
    row = _scratch(ctx, conversation_id, benchmark_id)
    key = _key(row.id, _clean(path))
    store = store_for(ctx.settings)
    # Only the copy's files: a folder's path, read as a file, failed in the store.
    if key not in store.keys(_prefix(row.id)):
        raise NotFound("No such file in the scratch copy.", {"path": path})
    data = store.read_bytes(key)
    return data.decode("utf-8", "replace")


def write_scratch_file(
    ctx: Context, conversation_id: str, benchmark_id: str, path: str, content: str
) -> ScratchView:
    """Create or replace one file of the scratch copy; nothing leaves the scratch space.

    Raises:
        NotFound: no such copy.
        InvalidInput: the path leaves the copy, or the file or copy would be too large.
    """
    row = _scratch(ctx, conversation_id, benchmark_id)
    data = content.encode("utf-8")
    if len(data) > MAX_FILE_BYTES:
        raise invalid(["content"], f"must be at most {MAX_FILE_BYTES} bytes")
    store = store_for(ctx.settings)
    key = _key(row.id, _clean(path))
    keys = store.keys(_prefix(row.id))
    _require_file_place(key, keys)
    if key not in keys and len(keys) >= MAX_FILES:
        raise invalid(["path"], f"a scratch copy holds at most {MAX_FILES} files")
    total = sum(store.size(k) for k in keys if k != key) + len(data)
    if total > ctx.settings.max_bundle_bytes:
        raise invalid(["content"], "the scratch copy would be larger than a bundle may be")
    store.put_bytes(key, data)
    row.updated_at = ctx.now()
    return _view(store, row)


def _require_file_place(key: str, keys: list[str]) -> None:
    """A file may not stand where the copy has a folder, nor inside one of its files.

    Raises:
        InvalidInput: `key` names a folder of the copy, or lies under one of its files.
    """
    if any(other.startswith(f"{key}/") for other in keys):
        raise invalid(["path"], "is a folder of the scratch copy: name a file inside it")
    under = next((other for other in keys if key.startswith(f"{other}/")), None)
    if under is not None:
        name = under.split("/", 2)[2]  # without the copy's own prefix
        raise invalid(["path"], f"lies inside {name}, which is a file of the scratch copy")


def rescore_in_scratch(
    ctx: Context, conversation_id: str, benchmark_id: str, run_id: str
) -> dict[str, Any]:
    """Rescore a run's saved predictions with the scratch copy's scoring program (A17): no
    model is called, nothing is uploaded, the run and every leaderboard stay as they are.

    Raises:
        NotFound: no such copy, or the run is not visible or not on this benchmark.
        Conflict: the run has no saved predictions.
        InvalidInput: the scratch bundle is invalid, or lacks a task the run has; every
            problem with its place.
    """
    row = _scratch(ctx, conversation_id, benchmark_id)
    run = access.require_run(ctx, run_id, Action.RUN_READ)
    if run.benchmark_id != row.benchmark_id:
        raise NotFound("That run is not on this benchmark.", {"run_id": run_id})
    store = store_for(ctx.settings)
    saved = store.keys(f"runs/{run.id}/predictions")
    if not saved:
        raise Conflict("This run has no saved predictions to rescore.", {"run_id": run.id})
    env = _bundle_versions.environment(ctx.settings)
    limits = _bundle_versions.archive_limits(ctx.settings)
    with tempfile.TemporaryDirectory(prefix="scratch-rescore-") as folder:
        work = Path(folder)
        (work / "bundle").mkdir()
        extract_zip(scratch_bundle(ctx, row), work / "bundle", limits)
        loaded = load_bundle(work / "bundle", limits)
        columns = scored_columns(loaded.competition.leaderboards[0])
        outcomes = []
        for key in saved:
            index = int(Path(key).stem.split("-", 1)[1])
            predictions = work / f"predictions-{index}"
            predictions.mkdir()
            extract_zip(store.read_bytes(key), predictions, limits, loc="predictions")
            place = work / f"task-{index}"
            place.mkdir()
            task = _task(loaded.tasks, index)
            chosen = Submission(results=predictions)
            outcomes.append(evaluate_task(task, place, env, chosen, columns))
        errors = [f"task {o.task_index}: {o.error}" for o in outcomes if o.error]
        scores: dict[str, float] = {}
        if not errors:
            try:
                scores = combine_scores(outcomes, loaded.competition.leaderboards[0])
            except InvalidInput as exc:
                errors.append(str(exc))
    return {
        "run_id": run.id,
        "scores_now": dict(run.scores),
        "scores_with_scratch": scores,
        "errors": errors,
        "log": [line for o in outcomes for line in o.log][-40:],
        "note": "Computed locally from the run's saved predictions; nothing was changed.",
    }


def _task(tasks: dict[int, ResolvedTask], index: int) -> ResolvedTask:
    """The copy's task that the run's saved predictions of task `index` are for.

    Raises:
        InvalidInput: the copy has no such task (renumbered or removed there).
    """
    if index not in tasks:
        raise invalid(
            ["competition.yaml", "tasks"],
            f"has no task {index}, which the run's saved predictions are for: keep the "
            "run's tasks to rescore it (tasks are added or removed in the web app)",
        )
    return tasks[index]


def scratch_bundle(ctx: Context, row: ScratchCopy) -> bytes:
    """The scratch copy as a bundle zip, byte for byte the same for the same files."""
    store = store_for(ctx.settings)
    buffer = io.BytesIO()
    prefix = _prefix(row.id) + "/"
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for key in store.keys(_prefix(row.id)):
            info = zipfile.ZipInfo(key[len(prefix) :], date_time=_EPOCH)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, store.read_bytes(key))
    return buffer.getvalue()


def scratch_for_change(
    ctx: Context, conversation_id: str, benchmark_id: str
) -> tuple[ScratchCopy, bytes, str]:
    """The scratch copy, its bundle bytes and their SHA-256, for proposing them as a version.

    Raises:
        NotFound: no such copy.
    """
    row = _scratch(ctx, conversation_id, benchmark_id)
    data = scratch_bundle(ctx, row)
    return row, data, hashlib.sha256(data).hexdigest()


def diff_against_current(ctx: Context, row: ScratchCopy, data: bytes) -> dict[str, Any]:
    """What the scratch bundle changes against the benchmark's current bundle: a unified diff
    of text files, and the names of binary ones (and of text too long to diff) added, removed
    or changed."""
    current = _bundle_versions.version_row(ctx, row.benchmark_id, None)
    before = _Files(store_for(ctx.settings).read_bytes(current.storage_key))
    after = _Files(data)
    lines: list[str] = []
    binary: list[str] = []
    diffed = 0
    for name in sorted(set(before.signs) | set(after.signs)):
        if before.signs.get(name) == after.signs.get(name):
            continue
        if name in before.large or name in after.large:
            binary.append(name)  # removed, replaced or changed: never read, so never diffed
            continue
        old, new = before.small.get(name), after.small.get(name)
        old_text, new_text = _text(old), _text(new)
        if old_text is None or new_text is None:
            binary.append(name)
            continue
        old_lines, new_lines = (
            old_text.splitlines(keepends=True),
            new_text.splitlines(keepends=True),
        )
        longest = max(len(old_lines), len(new_lines))
        if longest > MAX_DIFF_LINES or diffed + longest > MAX_DIFFED_LINES:
            binary.append(name)  # named as changed: too long to diff in bounded time
            continue
        diffed += longest
        lines.extend(
            difflib.unified_diff(
                old_lines,
                new_lines,
                f"a/{name}" if old is not None else "/dev/null",
                f"b/{name}" if new is not None else "/dev/null",
            )
        )
    return {"diff": "".join(lines), "binary_changes": binary, "base_version": current.version}


def purge_expired(ctx: Context) -> int:
    """Remove scratch copies untouched for longer than the retention; returns how many."""
    cutoff = ctx.now() - RETENTION
    stale = list(ctx.session.scalars(select(ScratchCopy).where(ScratchCopy.updated_at < cutoff)))
    store = store_for(ctx.settings)
    for row in stale:
        store.delete_prefix(_prefix(row.id))
    if stale:
        ctx.session.execute(delete(ScratchCopy).where(ScratchCopy.id.in_([r.id for r in stale])))
    return len(stale)


class _Files:
    """A bundle's files: the contents of those of up to MAX_FILE_BYTES, and the size and
    checksum of every one, so that a large file removed, replaced or changed is still seen."""

    def __init__(self, data: bytes) -> None:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            files = [info for info in archive.infolist() if not info.is_dir()]
            self.signs = {info.filename: (info.file_size, info.CRC) for info in files}
            self.large = {info.filename for info in files if info.file_size > MAX_FILE_BYTES}
            kept = [info for info in files if info.filename not in self.large]
            self.small = {info.filename: archive.read(info) for info in kept}


def _text(data: bytes | None) -> str | None:
    if data is None:
        return ""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _conversation(ctx: Context, conversation_id: str) -> Conversation:
    access.require(ctx, Action.CHAT_USE)
    row = ctx.session.get(Conversation, conversation_id)
    # A copy belongs to one conversation of one user: nobody else can reach it.
    if row is None or row.user_id != ctx.principal.user_id:
        raise NotFound("No such conversation.", {"id": conversation_id})
    return row


def _custom(ctx: Context, benchmark_id: str) -> Benchmark:
    benchmark = access.require_benchmark(ctx, benchmark_id, Action.BENCHMARK_READ_KEY)
    if benchmark.format != "custom":
        raise Conflict("Only custom benchmarks have a bundle to copy.", {"id": benchmark.id})
    return benchmark


def _find(ctx: Context, conversation_id: str, benchmark_id: str) -> ScratchCopy | None:
    return ctx.session.scalars(
        select(ScratchCopy).where(
            ScratchCopy.conversation_id == conversation_id,
            ScratchCopy.benchmark_id == benchmark_id,
        )
    ).first()


def _scratch(ctx: Context, conversation_id: str, benchmark_id: str) -> ScratchCopy:
    conversation = _conversation(ctx, conversation_id)
    _custom(ctx, benchmark_id)
    row = _find(ctx, conversation.id, benchmark_id)
    if row is None or row.updated_at < ctx.now() - RETENTION:
        raise NotFound(
            "No scratch copy of that benchmark in this conversation; copy it first.",
            {"benchmark_id": benchmark_id},
        )
    return row


def _prefix(scratch_id: str) -> str:
    return f"scratch/{scratch_id}"


def _key(scratch_id: str, path: str) -> str:
    return f"{_prefix(scratch_id)}/{path}"


def _clean(path: str) -> str:
    """A relative path inside the copy: no `..`, no absolute path, no backslash or control
    character (the store refuses such keys too; this says which argument was wrong)."""
    text = path.strip()
    pure = PurePosixPath(text)
    bad = (
        not text
        or text.startswith("/")
        or "\\" in text
        or any(ord(ch) < 32 for ch in text)
        or any(part in ("..", ".", "") for part in text.split("/"))
        or len(text) > 300
    )
    if bad:
        raise invalid(["path"], "must be a relative path inside the scratch copy, without '..'")
    return pure.as_posix()


def _view(store: ArtifactStore, row: ScratchCopy) -> ScratchView:
    prefix = _prefix(row.id) + "/"
    files = [
        {"path": key[len(prefix) :], "bytes": store.size(key)}
        for key in store.keys(_prefix(row.id))
    ]
    return ScratchView(row.id, row.benchmark_id, row.base_version, files)
