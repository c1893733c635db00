"""Uploaded submissions to a custom benchmark: a results zip or a code zip, exactly as Codabench
participants submit; each becomes a run, within the phase's submission limits."""

from __future__ import annotations

import hashlib
import io
import zipfile

from sqlalchemy import select

from benchgen.bundles.archive import require_few_entries, vetted_names
from benchgen.core.context import Context
from benchgen.core.errors import Conflict, invalid
from benchgen.core.ids import new_id
from benchgen.core.permissions import Action
from benchgen.core.text import line_problem
from benchgen.db.tables import Benchmark, Phase
from benchgen.services import access, audit
from benchgen.services._artifacts import store_for
from benchgen.services.accounts import ratelimits
from benchgen.services.benchmarks import _bundle_versions, phases
from benchgen.services.runs import launch
from benchgen.services.runs.launch import RunView

KINDS = ("auto", "results", "code")
MAX_PHASE_INDEX = 10_000


def submit(
    ctx: Context,
    benchmark_id: str,
    data: bytes,
    filename: str,
    phase_index: int | None = None,
    kind: str = "auto",
) -> RunView:
    """Submit a results zip or a code zip to a phase of a custom benchmark; it is scored in the
    sandbox by the bundle's programs like any run.

    `kind` "auto" treats the zip as code when the phase's tasks have an ingestion program and
    the zip holds Python files, else as results.

    Raises:
        NotFound: the benchmark or phase is not visible.
        PermissionDenied: the principal may not run on it.
        Conflict: not a custom benchmark, the phase is not open, or its `max_submissions` is used.
        InvalidInput: not a zip, too large, one the worker would refuse to unpack, an unknown
            kind, or a file name with control, bidirectional or invisible characters.
        RateLimited: the phase's submissions per day, or the strangers' run quota, is used up.
    """
    benchmark = access.require_held(ctx, benchmark_id, Action.RUN_LAUNCH)
    if benchmark.format != "custom":
        raise Conflict("Submissions are for custom benchmarks; run a model instead.")
    if kind not in KINDS:
        raise invalid(["kind"], f"must be one of {', '.join(KINDS)}")
    names = _zip_names(ctx, data)
    shown = _shown_name(filename)
    phase = _phase(ctx, benchmark, phase_index)
    phases.check_limits(ctx, phase)
    run_id = new_id("run")
    ratelimits.consume_run(ctx, benchmark, run_id)
    sha256 = hashlib.sha256(data).hexdigest()
    key = f"submissions/{benchmark.id}/{run_id}.zip"
    store_for(ctx.settings).put_bytes(key, data)
    tasks = launch.phase_task_count(ctx, phase)
    run = launch.new_run(ctx, run_id, benchmark, phase, None, {}, tasks, 0)
    run.submission = {
        "kind": _kind(ctx, benchmark.id, names, kind),
        "key": key,
        "filename": shown,
        "size": len(data),
        "sha256": sha256,
    }
    launch.queue_run(
        ctx,
        run,
        "bundle_run",
        f"submission {run.submission['filename']}",
        audit.AuditAction.SUBMISSION_CREATE,
        phase_id=phase.id,
        sha256=sha256,
    )
    return launch.view(ctx, run)


def _zip_names(ctx: Context, data: bytes) -> list[str]:
    """The names in the submission zip, read before anything is stored or counted.

    Raises:
        InvalidInput: too large, not a zip, one whose listing is corrupt, or one the worker
            would refuse to unpack (links, paths leaving the folder, too many or too large
            members, a zip bomb).
    """
    if len(data) > ctx.settings.max_submission_bytes:
        raise invalid(["submission"], f"is larger than {ctx.settings.max_submission_bytes} bytes")
    limits = _bundle_versions.archive_limits(ctx.settings)
    handle = io.BytesIO(data)
    require_few_entries(handle, limits, loc="submission")
    # is_zipfile only finds the end record: the listing itself may still be broken.
    try:
        opened = zipfile.ZipFile(handle)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, ValueError) as exc:
        raise invalid(["submission"], "must be a .zip file (results or code)") from exc
    except NotImplementedError as exc:  # a zip format version past what can be read
        raise invalid(["submission"], f"uses an unsupported zip feature: {exc}") from exc
    with opened:
        # Refused here, not by the worker: a run that could only fail is neither queued nor
        # counted against the phase's limits or the daily quota.
        return vetted_names(opened, limits, loc="submission")


def _shown_name(filename: str) -> str:
    """The file's own name, which names the run on leaderboards.

    Raises:
        InvalidInput: it holds a control, bidirectional or invisible character, which would
            let one entry pass itself off as another's (or not be storable at all: a NUL).
    """
    name = filename.replace("\\", "/").rsplit("/", 1)[-1][:200]
    if problem := line_problem(name):
        raise invalid(["submission"], f"the file name {problem}")
    return name if name.strip() else "submission.zip"


def current_phase(ctx: Context, benchmark_id: str) -> int | None:
    """The position of the phase a run or submission without one goes to
    (`launch.default_phase`; None when no phase is open now). A form preselects it.

    Raises:
        NotFound: the benchmark is not visible.
    """
    benchmark = access.require_benchmark(ctx, benchmark_id, Action.BENCHMARK_READ)
    current = launch.phase_open_now(ctx, benchmark)
    return current.position if current else None


def _phase(ctx: Context, benchmark: Benchmark, phase_index: int | None) -> Phase:
    """The chosen phase, or the one open now (`launch.default_phase`): once a development
    phase ends, a submission without a phase goes to the final one.

    Raises:
        InvalidInput: there is no phase `phase_index`.
        Conflict: the phase is not open now (none named: no phase is).
    """
    if phase_index is None:
        return launch.open_phase(ctx, benchmark, None)  # the default, as a run's
    found = 0 <= phase_index <= MAX_PHASE_INDEX
    phase = (
        ctx.session.scalars(
            select(Phase).where(Phase.benchmark_id == benchmark.id, Phase.position == phase_index)
        ).first()
        if found
        else None
    )
    if phase is None:
        raise invalid(["phase"], f"there is no phase {phase_index}; {_numbered(ctx, benchmark)}")
    return launch.open_phase(ctx, benchmark, phase.id)


def _numbered(ctx: Context, benchmark: Benchmark) -> str:
    """The phases by the numbers a submission names them with: their YAML indexes may
    start at 1, or leave gaps, where these never do."""
    phases = ctx.session.scalars(
        select(Phase).where(Phase.benchmark_id == benchmark.id).order_by(Phase.position)
    ).all()
    listed = ", ".join(f"{phase.position} ({phase.name})" for phase in phases)
    return f"phases are numbered from 0 in order: {listed}"


def _kind(ctx: Context, benchmark_id: str, names: list[str], kind: str) -> str:
    if kind != "auto":
        return kind
    version = _bundle_versions.latest_version(ctx, benchmark_id)
    spec = _bundle_versions.competition_of(version) if version else None
    has_ingestion = bool(spec and any(t.ingestion_program for t in spec.tasks))
    has_code = any(name.endswith(".py") for name in names)
    return "code" if has_ingestion and has_code else "results"
