"""Custom benchmarks from Codabench v2 bundles: upload, new versions, what readers see."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select

from benchgen.bundles.competition import CompetitionSpec
from benchgen.core.config import Settings
from benchgen.core.context import Context
from benchgen.core.errors import Conflict, NotFound
from benchgen.core.ids import new_id
from benchgen.core.permissions import Action
from benchgen.db.tables import Benchmark, BundleVersion, Phase, PhaseTask, Run, Task
from benchgen.services import access, audit
from benchgen.services._artifacts import store_for
from benchgen.services.accounts import ratelimits
from benchgen.services.benchmarks import _bundle_versions, lifecycle
from benchgen.services.benchmarks._bundle_versions import Inspected

_TEAM_ONLY = ("solutions", "tasks", "extra", "warnings")


@dataclass(frozen=True)
class BundleView:
    """A custom benchmark's bundle as the principal may see it: pages, phases and leaderboard
    columns for every reader; solutions, warnings and the version list for its team only."""

    benchmark_id: str
    version: int
    filename: str
    sha256: str
    size: int
    docker_image: str | None
    pages: list[dict[str, str]]
    terms_html: str
    competition: dict[str, Any]
    warnings: list[dict[str, Any]] | None
    solutions: list[dict[str, Any]] | None
    versions: list[dict[str, Any]] | None
    uploaded_at: datetime


@dataclass(frozen=True)
class Download:
    """A file to send as an attachment."""

    filename: str
    data: bytes


@dataclass(frozen=True)
class Checked:
    """A bundle unpacked, validated and with its solutions scored, outside any unit of work:
    `upload_bundle` and `upload_bundle_version` store it instead of running its programs again.
    `inspected.sha256` ties it to the bytes it was made from."""

    inspected: Inspected


@dataclass(frozen=True)
class BundleCheck:
    """An upload that passed its guards (`check_bundle`), waiting for its programs to run."""

    settings: Settings
    data: bytes
    filename: str

    def inspect(self) -> Checked:
        """Unpack and validate the bundle and score its solutions in the sandbox. Call it with
        no unit of work open: it may take minutes, and reads and writes no database.

        Raises:
            InvalidInput: too large, unsafe or invalid; every problem with its YAML place and
                line.
        """
        return Checked(_bundle_versions.inspect_upload(self.settings, self.data, self.filename))


def check_bundle(
    ctx: Context, data: bytes, filename: str, benchmark_id: str | None = None
) -> BundleCheck:
    """The guards of `upload_bundle` (of `upload_bundle_version` given `benchmark_id`), in a
    unit of work that only reads. Edges call it, then `BundleCheck.inspect` with no unit of
    work open, then the upload with `checked=` in a write: a bundle's programs run for minutes,
    and on SQLite a write transaction blocks every other write on the server meanwhile.

    Raises:
        NotFound: `benchmark_id` is not visible.
        PermissionDenied: the principal may not create benchmarks, or edit this one.
        Conflict: not a custom benchmark, or the bundle is byte for byte its current version.
        RateLimited: the creation limit is full (looked at, not counted: the upload counts).
    """
    if benchmark_id is None:
        access.require(ctx, Action.BENCHMARK_CREATE)
        # Before any program runs: a full creation window must not buy anyone sandbox time.
        ratelimits.require_creation_room(ctx)
    else:
        _editable(ctx, benchmark_id, data)
    return BundleCheck(ctx.settings, data, filename)


def upload_bundle(
    ctx: Context, data: bytes, filename: str, checked: Checked | None = None
) -> lifecycle.Created:
    """Create a custom benchmark from a Codabench v2 bundle (.zip), owned by the acting user.

    The bundle is unpacked in a throw-away folder, validated whole, and its solutions are
    scored in the sandbox (unless `checked`, from `check_bundle`, already did); the benchmark
    stays private until published.

    Raises:
        PermissionDenied: the principal may not create benchmarks.
        InvalidInput: too large, unsafe or invalid; every problem with its YAML place and line.
        RateLimited: the creation limit is reached (uploads count like any creation).
        ValueError: `checked` was made from other bytes than `data` (a bug in the caller).
    """
    access.require(ctx, Action.BENCHMARK_CREATE)
    benchmark_id = new_id("bm")
    # Before any program runs: a full creation window must not buy anyone sandbox time.
    ratelimits.consume_creation(ctx, benchmark_id)
    inspected = _inspected(ctx, data, filename, checked)
    spec = inspected.competition
    owner_id = ctx.principal.user_id
    assert owner_id is not None  # creating is an own-account action: a user is acting
    now = ctx.now()
    row = Benchmark(
        id=benchmark_id,
        owner_id=owner_id,
        title=spec.title,
        description=spec.description,
        format="custom",
        visibility="private",
        scoring={"leaderboard": _leaderboard_json(spec)},
        created_door=ctx.principal.door,
        version=1,
        created_at=now,
        updated_at=now,
    )
    ctx.session.add(row)
    ctx.session.flush()
    _sync_structure(ctx, row, spec)
    _bundle_versions.store_version(ctx, benchmark_id, 1, inspected, filename)
    _audit_upload(ctx, row, inspected)
    return lifecycle.Created(
        lifecycle.get_benchmark(ctx, benchmark_id),
        [w.as_error() for w in spec.warnings],
    )


def upload_bundle_version(
    ctx: Context,
    benchmark_id: str,
    data: bytes,
    filename: str,
    checked: Checked | None = None,
) -> BundleView:
    """Replace a custom benchmark's bundle with a changed one, as its next version (its
    programs run here unless `checked`, from `check_bundle`, already ran them). Runs keep
    the version they used; custom benchmarks stay editable after runs.

    Raises:
        NotFound: not visible.
        PermissionDenied: not the owner or a collaborator; or the new bundle adds or removes
            phases or tasks and a token or the agent asked (that is done in the web app, at
            /benchmarks/{id}/settings/phases).
        Conflict: not a custom benchmark, a removed phase already has runs, or the bundle is
            byte for byte the current version (named in the error).
        InvalidInput: the bundle is invalid; every problem with its place.
        ValueError: `checked` was made from other bytes than `data` (a bug in the caller).
    """
    row = _editable(ctx, benchmark_id, data)
    inspected = _inspected(ctx, data, filename, checked)
    # Held exclusively once the programs ran: a run starting meanwhile (which holds the row
    # shared) counts in the check of removed phases below, and the version is read again.
    row = access.require_held(ctx, row.id, Action.BENCHMARK_EDIT, exclusive=True)
    # Again under the lock: the same bundle sent twice at once passed the check above twice.
    _require_changed(ctx, row.id, data)
    spec = inspected.competition
    require_structure_allowed(ctx, row, spec)
    _sync_structure(ctx, row, spec)
    row.version += 1
    row.title, row.description = spec.title, spec.description
    row.scoring = {"leaderboard": _leaderboard_json(spec)}
    row.updated_at = ctx.now()
    _bundle_versions.store_version(ctx, row.id, row.version, inspected, filename)
    _audit_upload(ctx, row, inspected)
    ctx.session.flush()
    return get_bundle(ctx, row.id)


def _editable(ctx: Context, benchmark_id: str, data: bytes) -> Benchmark:
    """The custom benchmark that `data` may become the next version of.

    Raises:
        NotFound: not visible.
        PermissionDenied: not the owner or a collaborator.
        Conflict: not a custom benchmark, or `data` is its current version.
    """
    row = access.require_benchmark(ctx, benchmark_id, Action.BENCHMARK_EDIT)
    if row.format != "custom":
        raise Conflict("Only custom benchmarks take a bundle.", {"id": row.id})
    _require_changed(ctx, row.id, data)
    return row


def _inspected(ctx: Context, data: bytes, filename: str, checked: Checked | None) -> Inspected:
    """What `checked` learnt of `data`, or, without it, that learnt now (its programs run).

    Raises:
        InvalidInput: the bundle is invalid (only when it is inspected here).
        ValueError: `checked` was made from other bytes.
    """
    if checked is None:
        return _bundle_versions.inspect_bundle(ctx, data, filename)
    if checked.inspected.sha256 != hashlib.sha256(data).hexdigest():
        raise ValueError("The checked bundle is not the one being stored.")
    return checked.inspected


def _require_changed(ctx: Context, benchmark_id: str, data: bytes) -> None:
    # Checked before unpacking: the same bytes would only score the same solutions again, and a
    # second identical version would split the runs across versions that do not differ.
    current = _bundle_versions.latest_version(ctx, benchmark_id)
    if current is not None and current.sha256 == hashlib.sha256(data).hexdigest():
        raise Conflict(
            f"This bundle is identical to version {current.version}, the current one.",
            {"id": benchmark_id, "version": current.version, "sha256": current.sha256},
        )


def require_structure_allowed(ctx: Context, row: Benchmark, spec: CompetitionSpec) -> None:
    """Refuse a bundle that adds or removes phases or tasks unless a person asks in the web app
    or CLI: that is a session-only action (A13), whoever holds a token or runs the agent.

    Raises:
        PermissionDenied: a token or the agent asked; the refusal links the phases page.
    """
    if _structure(ctx, row.id) != _wanted_structure(spec):
        access.require(ctx, Action.PHASES_MANAGE, row)


def get_bundle(ctx: Context, benchmark_id: str) -> BundleView:
    """The current bundle of a custom benchmark.

    Raises:
        NotFound: not visible, or not a custom benchmark.
    """
    row = access.require_benchmark(ctx, benchmark_id, Action.BENCHMARK_READ)
    version = _version_of(ctx, row, None)
    team = access.can(ctx, Action.BENCHMARK_READ_KEY, row)
    spec = _bundle_versions.competition_of(version)
    public = spec.to_json()
    if not team:
        # Solutions' paths, program names and the warnings (which name every unknown key,
        # `extra`'s included) are the team's; readers see the rules only.
        public = {k: v for k, v in public.items() if k not in _TEAM_ONLY}
    return BundleView(
        benchmark_id=row.id,
        version=version.version,
        filename=version.filename,
        sha256=version.sha256,
        size=version.size,
        docker_image=spec.docker_image,
        pages=list(version.competition.get("pages", [])),
        terms_html=str(version.competition.get("terms_html", "")),
        competition=public,
        warnings=list(version.warnings) if team else None,
        solutions=list(version.solutions) if team else None,
        versions=_versions(ctx, row.id) if team else None,
        uploaded_at=version.created_at,
    )


def download_bundle(ctx: Context, benchmark_id: str, version: int | None = None) -> Download:
    """The bundle zip exactly as uploaded (owner and collaborators only: it holds the reference
    data and the solutions).

    Raises:
        NotFound: not visible, or no such version.
        PermissionDenied: not the benchmark's team.
    """
    row = access.require_benchmark(ctx, benchmark_id, Action.BENCHMARK_READ_KEY)
    stored = _version_of(ctx, row, version)
    data = store_for(ctx.settings).read_bytes(stored.storage_key)
    return Download(f"{row.id}-v{stored.version}.zip", data)


def _version_of(ctx: Context, row: Benchmark, version: int | None) -> BundleVersion:
    """A custom benchmark's bundle version (`version_row`); a qa or mcq benchmark has none,
    which the error says rather than "no such version".

    Raises:
        NotFound: not a custom benchmark, or no such version.
    """
    if row.format != "custom":
        raise NotFound(
            f"This is a {row.format} benchmark: only custom benchmarks have a bundle.",
            {"id": row.id, "format": row.format},
        )
    return _bundle_versions.version_row(ctx, row.id, version)


def _versions(ctx: Context, benchmark_id: str) -> list[dict[str, Any]]:
    rows = ctx.session.scalars(
        select(BundleVersion)
        .where(BundleVersion.benchmark_id == benchmark_id)
        .order_by(BundleVersion.version.desc())
    )
    return [
        {
            "version": r.version,
            "sha256": r.sha256,
            "size": r.size,
            "filename": r.filename,
            "created_at": r.created_at.isoformat(),
            "solutions_ok": all(s.get("ok") for s in r.solutions),
        }
        for r in rows
    ]


def _leaderboard_json(spec: CompetitionSpec) -> dict[str, Any]:
    data: dict[str, Any] = spec.to_json()["leaderboards"][0]
    return data


def _audit_upload(ctx: Context, row: Benchmark, inspected: Inspected) -> None:
    audit.record(
        ctx,
        audit.AuditAction.BUNDLE_UPLOAD,
        "benchmark",
        row.id,
        version=row.version,
        sha256=inspected.sha256,
        solutions_ok=all(s["ok"] for s in inspected.solutions),
    )


def _structure(ctx: Context, benchmark_id: str) -> tuple[tuple[str, ...], ...]:
    """The benchmark's phases in order, each as the bundle task indexes it runs."""
    phases = ctx.session.scalars(
        select(Phase).where(Phase.benchmark_id == benchmark_id).order_by(Phase.position)
    ).all()
    links = ctx.session.execute(
        select(PhaseTask.phase_id, Task.data_ref)
        .join(Task, Task.id == PhaseTask.task_id)
        .where(Task.benchmark_id == benchmark_id)
    ).all()
    return tuple(
        tuple(sorted(ref for phase_id, ref in links if phase_id == phase.id)) for phase in phases
    )


def _wanted_structure(spec: CompetitionSpec) -> tuple[tuple[str, ...], ...]:
    ordered = sorted(spec.phases, key=lambda p: p.index)
    return tuple(tuple(sorted(_task_ref(i) for i in phase.tasks)) for phase in ordered)


def _task_ref(index: int) -> str:
    return f"bundle:{index}"


def _sync_structure(ctx: Context, benchmark: Benchmark, spec: CompetitionSpec) -> None:
    """Make the benchmark's tasks and phases those of the bundle: matched by task index and
    phase position, updated in place, added, or removed (never a phase that has runs)."""
    tasks = {
        t.data_ref: t
        for t in ctx.session.scalars(select(Task).where(Task.benchmark_id == benchmark.id))
    }
    for task_spec in spec.tasks:
        ref = _task_ref(task_spec.index)
        task = tasks.pop(ref, None) or Task(id=new_id("tsk"), benchmark_id=benchmark.id)
        task.name, task.data_ref, task.scoring = task_spec.name, ref, {}
        ctx.session.add(task)
        tasks.setdefault(ref, task)
    for stale in [t for ref, t in tasks.items() if ref not in _task_refs(spec)]:
        ctx.session.delete(stale)
    ctx.session.flush()
    by_ref = {
        t.data_ref: t.id
        for t in ctx.session.scalars(select(Task).where(Task.benchmark_id == benchmark.id))
    }
    _sync_phases(ctx, benchmark, spec, by_ref)


def _task_refs(spec: CompetitionSpec) -> set[str]:
    return {_task_ref(t.index) for t in spec.tasks}


def _sync_phases(
    ctx: Context, benchmark: Benchmark, spec: CompetitionSpec, task_ids: dict[str, str]
) -> None:
    existing = list(
        ctx.session.scalars(
            select(Phase).where(Phase.benchmark_id == benchmark.id).order_by(Phase.position)
        )
    )
    ordered = sorted(spec.phases, key=lambda p: p.index)
    for position, phase_spec in enumerate(ordered):
        phase = existing[position] if position < len(existing) else None
        if phase is None:
            phase = Phase(id=new_id("ph"), benchmark_id=benchmark.id, position=position)
        phase.name, phase.position = phase_spec.name, position
        phase.starts_at, phase.ends_at = phase_spec.start, phase_spec.end
        phase.rules = {
            "description": phase_spec.description,
            "max_submissions": phase_spec.max_submissions,
            "max_submissions_per_day": phase_spec.max_submissions_per_day,
            "execution_time_limit": phase_spec.execution_time_limit,
        }
        ctx.session.add(phase)
        ctx.session.flush()
        ctx.session.query(PhaseTask).filter(PhaseTask.phase_id == phase.id).delete()
        ctx.session.add_all(
            PhaseTask(phase_id=phase.id, task_id=task_ids[_task_ref(i)])
            for i in dict.fromkeys(phase_spec.tasks)
        )
    for phase in existing[len(ordered) :]:
        if ctx.session.scalar(select(Run.id).where(Run.phase_id == phase.id).limit(1)):
            raise Conflict(
                f"The new bundle drops phase {phase.name!r}, which already has runs.",
                {"phase_id": phase.id},
            )
        ctx.session.delete(phase)
