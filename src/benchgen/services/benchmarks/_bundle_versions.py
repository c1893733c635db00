"""Stored bundle versions, unguarded: inspect an upload (unpack, validate, score its solutions),
keep it, and unpack a stored one for a run. Callers check access first."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import select

from benchgen.bundles.archive import ArchiveLimits, extract_zip
from benchgen.bundles.competition import CompetitionSpec
from benchgen.bundles.evaluation import (
    Environment,
    Submission,
    TaskOutcome,
    combine_scores,
    evaluate_task,
    scored_columns,
)
from benchgen.bundles.layout import LoadedBundle, load_bundle
from benchgen.bundles.sandbox import Limits
from benchgen.bundles.trees import plain_files, scratch_folder
from benchgen.core.config import Settings
from benchgen.core.context import Context
from benchgen.core.errors import Conflict, InvalidInput, NotFound, invalid
from benchgen.core.ids import new_id
from benchgen.core.text import line_problem
from benchgen.db.tables import BundleVersion
from benchgen.services._artifacts import store_for

MAX_VERSION = 2**31 - 1  # a 32-bit column
# Of each failing task's program output kept with a solution's result (the end, where a
# traceback is): enough to see why, small enough for every view of the bundle to carry.
SOLUTION_OUTPUT_CHARS = 4000
# An upload waits for its solutions' programs: their evaluations (solutions × tasks) are
# bounded (published bundles have a few solutions over a few tasks per phase), and all of them
# share this many times the time one program may take.
MAX_SOLUTION_RUNS = 64
SOLUTION_TIME_FACTOR = 2


@dataclass(frozen=True)
class Inspected:
    """A bundle that passed validation, with what the server keeps of it."""

    data: bytes
    sha256: str
    competition: CompetitionSpec
    pages: list[dict[str, str]]
    terms_html: str
    solutions: list[dict[str, Any]]


def environment(settings: Settings, phase_limit_s: int | None = None) -> Environment:
    """How programs run on this deployment: limits from the settings, and the time a phase's
    `execution_time_limit` allows when it is shorter."""
    seconds = min(settings.program_wall_seconds, phase_limit_s or settings.program_wall_seconds)
    limits = Limits(
        wall_seconds=float(seconds),
        cpu_seconds=seconds,
        memory_bytes=settings.program_memory_mib << 20,
    )
    return Environment(
        settings.sandbox_runtime.resolve(), limits, settings.allow_unsandboxed_programs
    )


def archive_limits(settings: Settings) -> ArchiveLimits:
    """Unpacking limits sized to the deployment's largest bundle."""
    return ArchiveLimits(max_total_bytes=max(settings.max_bundle_bytes * 4, 1 << 30))


def inspect_bundle(ctx: Context, data: bytes, filename: str) -> Inspected:
    """Unpack and validate an uploaded bundle in a throw-away folder, and score its solutions.

    Raises:
        InvalidInput: too large, unsafe, or invalid; every problem with its place.
    """
    return inspect_upload(ctx.settings, data, filename)


def inspect_upload(settings: Settings, data: bytes, filename: str) -> Inspected:
    """`inspect_bundle` without a unit of work: it reads and writes no database, so it can run
    while none is open (its programs may take many minutes).

    Raises:
        InvalidInput: too large, unsafe, or invalid; every problem with its place.
    """
    if len(data) > settings.max_bundle_bytes:
        raise invalid(["bundle"], f"is larger than {settings.max_bundle_bytes} bytes")
    if not filename.lower().endswith(".zip"):
        raise invalid(["bundle"], "must be a .zip file with competition.yaml at its root")
    # The name is kept and shown with the version; a NUL could not even be stored.
    if problem := line_problem(Path(filename).name):
        raise invalid(["bundle"], f"the file name {problem}")
    with scratch_folder("bundle-") as folder:
        loaded = _unpack(settings, data, folder)
        solutions = score_solutions(settings, loaded, folder / "solutions-work")
    return Inspected(
        data=data,
        sha256=hashlib.sha256(data).hexdigest(),
        competition=loaded.competition,
        pages=[{"title": title, "html": html} for title, html in loaded.pages],
        terms_html=loaded.terms_html,
        solutions=solutions,
    )


def _unpack(settings: Settings, data: bytes, folder: Path) -> LoadedBundle:
    root = folder / "bundle"
    root.mkdir()
    limits = archive_limits(settings)
    extract_zip(data, root, limits)
    return load_bundle(root, limits)


def score_solutions(settings: Settings, loaded: LoadedBundle, work: Path) -> list[dict[str, Any]]:
    """Score each solution of the bundle on its tasks (results, or code through ingestion),
    within the upload's bounds on evaluations and total time.

    Raises:
        InvalidInput: the solutions need more evaluations than an upload may run.
    """
    pairs = [
        (spec, task_index)
        for spec in loaded.competition.solutions
        for task_index in spec.tasks or tuple(loaded.tasks)
    ]
    # The uploader waits, and holds a worker and a sandbox uid, for every program run here.
    if len(pairs) > MAX_SOLUTION_RUNS:
        msg = (
            f"the solutions need {len(pairs)} evaluations (solutions × tasks); an upload may "
            f"run at most {MAX_SOLUTION_RUNS}"
        )
        raise invalid(["solutions"], msg)
    budget = solutions_budget_s(settings)
    deadline = time.monotonic() + budget
    leaderboard = loaded.competition.leaderboards[0]
    outcomes: dict[int, list[TaskOutcome]] = {
        spec.index: [] for spec in loaded.competition.solutions
    }
    for spec, task_index in pairs:
        place = work / f"solution-{spec.index}-task-{task_index}"
        place.mkdir(parents=True)
        left = int(deadline - time.monotonic())
        if left < 1:
            error = f"not run: the upload's {budget} s for scoring its solutions ran out"
            outcome = TaskOutcome(task_index, {}, [], error, None)
        else:
            outcome = _score_one(settings, loaded, spec.index, task_index, place, left)
        outcomes[spec.index].append(outcome)
    return [
        _solution_result(spec.index, spec.name, outcomes[spec.index], leaderboard)
        for spec in loaded.competition.solutions
    ]


def solutions_budget_s(settings: Settings) -> int:
    """The seconds an upload's solutions may take in all."""
    return settings.program_wall_seconds * SOLUTION_TIME_FACTOR


def _score_one(
    settings: Settings, loaded: LoadedBundle, solution: int, task_index: int, place: Path, left: int
) -> TaskOutcome:
    folder = loaded.solutions[solution]
    task = loaded.tasks[task_index]
    # A solution with Python files is code for the ingestion program; else results.
    as_code = task.ingestion_program is not None and _has_python(folder)
    submission = Submission(code=folder) if as_code else Submission(results=folder)
    columns = scored_columns(loaded.competition.leaderboards[0])
    # Each program may use what is left of the upload's time, and no more than a program may.
    return evaluate_task(task, place, environment(settings, left), submission, columns)


def _has_python(folder: Path) -> bool:
    return any(name.endswith(".py") for name in plain_files(folder))


def _solution_result(
    index: int, name: str, outcomes: list[TaskOutcome], leaderboard: Any
) -> dict[str, Any]:
    errors = [f"task {o.task_index}: {o.error}" for o in outcomes if o.error]
    output = "\n".join(_output_tail(o) for o in outcomes if o.error)
    scores: dict[str, float] = {}
    if not errors:
        try:
            scores = combine_scores(outcomes, leaderboard)
        except InvalidInput as exc:
            errors.append(str(exc))
    return {
        "index": index,
        "name": name,
        "ok": not errors,
        "scores": scores,
        "error": "; ".join(errors),
        "output": output,
    }


def _output_tail(outcome: TaskOutcome) -> str:
    """What a failed task's programs printed, so the author can see why (bounded, redacted)."""
    text = outcome.printed()
    if len(text) > SOLUTION_OUTPUT_CHARS:
        text = "…" + text[-SOLUTION_OUTPUT_CHARS:]
    return f"[task {outcome.task_index}]\n{text}"


def store_version(
    ctx: Context, benchmark_id: str, version: int, inspected: Inspected, filename: str
) -> BundleVersion:
    """Keep the bundle's bytes and what was learnt from them as version `version`."""
    key = f"bundles/{benchmark_id}/v{version}-{inspected.sha256[:12]}.zip"
    store_for(ctx.settings).put_bytes(key, inspected.data)
    assert ctx.principal.user_id is not None  # uploads are made by a user
    row = BundleVersion(
        id=new_id("bv"),
        benchmark_id=benchmark_id,
        version=version,
        sha256=inspected.sha256,
        size=len(inspected.data),
        storage_key=key,
        filename=Path(filename).name[:300] or "bundle.zip",
        competition={
            "spec": inspected.competition.to_json(),
            "pages": inspected.pages,
            "terms_html": inspected.terms_html,
        },
        warnings=[w.as_error() for w in inspected.competition.warnings],
        solutions=inspected.solutions,
        uploaded_by=ctx.principal.user_id,
        created_at=ctx.now(),
    )
    ctx.session.add(row)
    return row


def latest_version(ctx: Context, benchmark_id: str) -> BundleVersion | None:
    """The newest bundle version of a custom benchmark."""
    return ctx.session.scalars(
        select(BundleVersion)
        .where(BundleVersion.benchmark_id == benchmark_id)
        .order_by(BundleVersion.version.desc())
        .limit(1)
    ).first()


def version_row(ctx: Context, benchmark_id: str, version: int | None) -> BundleVersion:
    """One version (the newest when `version` is None).

    Raises:
        NotFound: no such version.
    """
    if version is None:
        row = latest_version(ctx, benchmark_id)
    elif not 1 <= version <= MAX_VERSION:
        row = None
    else:
        row = ctx.session.scalars(
            select(BundleVersion).where(
                BundleVersion.benchmark_id == benchmark_id, BundleVersion.version == version
            )
        ).first()
    if row is None:
        raise NotFound("No such bundle version.", {"version": version})
    return row


def competition_of(row: BundleVersion) -> CompetitionSpec:
    """The parsed competition a version was uploaded with."""
    return CompetitionSpec.from_json(row.competition["spec"])


def require_solutions_pass(ctx: Context, benchmark_id: str) -> None:
    """Refuse to publish a custom benchmark while a solution of its bundle fails.

    Raises:
        Conflict: a solution failed, with why.
    """
    row = latest_version(ctx, benchmark_id)
    if row is None:
        raise Conflict("This custom benchmark has no bundle yet.", {"id": benchmark_id})
    failed = [s for s in row.solutions if not s.get("ok")]
    if failed:
        why = "; ".join(f"solution {s['index']} ({s['name']}): {s['error']}" for s in failed)
        raise Conflict(
            f"It cannot be published while a solution of its bundle fails: {why}",
            {"id": benchmark_id, "solutions": failed},
        )


@contextmanager
def unpacked(settings: Settings, row: BundleVersion) -> Iterator[LoadedBundle]:
    """A stored version unpacked into a throw-away folder for as long as the block runs."""
    with scratch_folder("bundle-run-") as folder:
        data = store_for(settings).read_bytes(row.storage_key)
        yield _unpack(settings, data, folder)
