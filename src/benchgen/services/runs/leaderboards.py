"""Leaderboards: per benchmark phase; runs are added by hand (never automatically, never by a
token or the agent); ranked by the primary column, then the others, then the earlier run."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from sqlalchemy import CursorResult, delete, select
from sqlalchemy.exc import IntegrityError

from benchgen.core.context import Context
from benchgen.core.errors import Conflict, NotFound, invalid
from benchgen.core.ids import new_id
from benchgen.core.permissions import Action, Role
from benchgen.core.statuses import RunStatus
from benchgen.core.text import require_text
from benchgen.db.tables import Benchmark, BundleVersion, LeaderboardEntry, Phase, Run, User
from benchgen.services import access, audit
from benchgen.services.runs import _verdicts, settings
from benchgen.services.runs.standings import Entry, Standing, ranked_entries
from benchgen.services.specs import MAX_LIST, check_window

COLUMNS = ("accuracy",)  # qa and mcq; custom formats bring their own columns
ORGANISERS = frozenset({Role.OWNER, Role.COLLABORATOR})  # with admins, see hidden columns


@dataclass(frozen=True)
class Column:
    """A leaderboard column: its key in the runs' scores, title, and which way is better."""

    key: str
    title: str
    sorting: str = "desc"
    hidden: bool = False
    precision: int | None = None


def columns_of(benchmark: Benchmark) -> list[Column]:
    """The benchmark's leaderboard columns, primary first: accuracy for qa and mcq, the
    bundle's columns (in index order, hidden ones included for ranking) for custom ones."""
    declared = benchmark.scoring.get("leaderboard") if benchmark.format == "custom" else None
    if not declared:
        return [Column(c, c.capitalize()) for c in COLUMNS]
    ordered = sorted(declared.get("columns", []), key=lambda c: c.get("index", 0))
    return [
        Column(
            str(c["key"]),
            str(c.get("title") or c["key"]),
            str(c.get("sorting") or "desc"),
            bool(c.get("hidden")),
            c.get("precision"),
        )
        for c in ordered
    ]


def hidden_from(
    ctx: Context,
    run: Run,
    benchmark: Benchmark | None = None,
    viewer: User | None = None,
    roles: frozenset[Role] | None = None,
) -> frozenset[str]:
    """The run's score columns that `viewer` (the acting user by default; `roles` are theirs
    when a list already looked them up) may not see: the bundle's hidden columns, for everyone
    but the benchmark's owner, collaborators and admins (Codabench v2: a hidden column ranks the
    board, its scores are for the organisers only). Every place that shows a run's scores asks
    this; a system job writing what others will read (a log line) gets them all."""
    benchmark = benchmark or ctx.session.get(Benchmark, run.benchmark_id)
    if benchmark is None or benchmark.format != "custom":
        return frozenset()
    hidden = _hidden_keys(ctx, benchmark, run.benchmark_version)
    viewer = viewer or access.live_user(ctx)
    if not hidden or viewer is None:
        return hidden
    if roles is None or viewer.id != ctx.principal.user_id:
        roles = access.roles_on(ctx, viewer, benchmark)
    return frozenset() if viewer.is_admin or roles & ORGANISERS else hidden


def run_columns(ctx: Context, run_id: str) -> list[Column]:
    """The leaderboard columns a run's page shows the acting user, primary first: the hidden
    ones to the benchmark's organisers only (`hidden_from`).

    Raises:
        NotFound: the run is not visible to the principal.
    """
    run = access.require_run(ctx, run_id, Action.RUN_READ)
    benchmark = ctx.session.get(Benchmark, run.benchmark_id)
    assert benchmark is not None  # require_run found it
    hidden = hidden_from(ctx, run, benchmark)
    return [column for column in columns_of(benchmark) if column.key not in hidden]


def _hidden_keys(ctx: Context, benchmark: Benchmark, version: int) -> frozenset[str]:
    """The hidden columns of the benchmark now and of the version that scored a run: a column
    hidden in either stays hidden (a new version may drop or show a column an old run has)."""
    hidden = {c.key for c in columns_of(benchmark) if c.hidden}
    if version != benchmark.version:
        row = ctx.session.scalars(
            select(BundleVersion).where(
                BundleVersion.benchmark_id == benchmark.id, BundleVersion.version == version
            )
        ).first()
        if row is not None:
            # Imported here: the bundle engine (Markdown, YAML) is for custom benchmarks only,
            # and every run's view passes through this module (`benchgen run` starts faster).
            from benchgen.services.benchmarks import _bundle_versions

            board = _bundle_versions.competition_of(row).leaderboards[0]
            hidden |= {c.key for c in board.columns if c.hidden}
    return frozenset(hidden)


def shown_scores(scores: Mapping[str, Any], hidden: frozenset[str]) -> dict[str, Any]:
    """`scores` without the `hidden` columns (`hidden_from`)."""
    return {key: value for key, value in scores.items() if key not in hidden}


def shown_summary(summary: Mapping[str, Any], hidden: frozenset[str]) -> dict[str, Any]:
    """A run's summary without the `hidden` columns in its tasks' scores (custom runs)."""
    tasks = summary.get("tasks")
    if not hidden or not isinstance(tasks, dict):
        return dict(summary)
    return {**summary, "tasks": {k: shown_scores(v, hidden) for k, v in tasks.items()}}


@dataclass(frozen=True)
class Row:
    """One ranked entry."""

    rank: int
    run_id: str
    model_name: str
    submitted_by: str
    scores: dict[str, Any]
    score_edited: bool
    finished_at: datetime | None
    settings: str  # the run's generation settings that differ from the defaults


@dataclass(frozen=True)
class Leaderboard:
    """A phase's leaderboard: its columns (primary first) and ranked rows."""

    benchmark_id: str
    phase_id: str
    columns: list[str]
    rows: list[Row]
    titles: dict[str, str]
    sorting: dict[str, str]


def add_to_leaderboard(ctx: Context, run_id: str) -> None:
    """Put a finished, scored run on its phase's leaderboard (owner/collaborator, web or CLI).

    Raises:
        NotFound / PermissionDenied: not the benchmark's team, or a token or the agent asked.
        Conflict: the run has not completed, has no score (or was scored by a version with
            other columns, named), is partial (a subset or a
            retry: it did not answer the whole benchmark), or is already on it.
    """
    run = access.require_run(ctx, run_id, Action.LEADERBOARD_MANAGE)
    benchmark = ctx.session.get(Benchmark, run.benchmark_id)
    assert benchmark is not None  # require_run found it
    primary = columns_of(benchmark)[0].key
    if run.status == RunStatus.COMPLETED and run.benchmark_version != benchmark.version:
        _require_current_columns(run, benchmark, primary)
    if run.status != RunStatus.COMPLETED or run.scores.get(primary) is None:
        raise Conflict("Only completed, scored runs can be on a leaderboard.", {"id": run.id})
    if run.partial:
        raise Conflict(
            "This run asked only part of the benchmark (a subset or a retry of errors); "
            "partial runs cannot be on a leaderboard.",
            {"id": run.id},
        )
    already = Conflict("The run is already on the leaderboard.", {"id": run.id})
    if ctx.session.scalar(select(LeaderboardEntry.id).where(LeaderboardEntry.run_id == run.id)):
        raise already
    assert ctx.principal.user_id is not None  # a session principal acting for a user
    entry = LeaderboardEntry(
        id=new_id("lb"),
        benchmark_id=run.benchmark_id,
        phase_id=run.phase_id,
        run_id=run.id,
        added_by=ctx.principal.user_id,
        added_at=ctx.now(),
    )
    try:
        # The unique run decides two adds at once that both found it off the board (on
        # PostgreSQL the second waits for the first to commit, then fails here).
        with ctx.session.begin_nested():
            ctx.session.add(entry)
            ctx.session.flush()
    except IntegrityError:
        raise already from None
    audit.record(
        ctx, audit.AuditAction.LEADERBOARD_ADD, "run", run.id, benchmark_id=run.benchmark_id
    )


def _require_current_columns(run: Run, benchmark: Benchmark, primary: str) -> None:
    # A custom benchmark's columns change with its bundle while a run keeps the scores of the
    # version that scored it: the refusal says so, rather than calling a scored run unscored.
    if run.scores.get(primary) is None:
        raise Conflict(
            f"This run was scored by version {run.benchmark_version}, whose leaderboard columns "
            f"differ from those of the current version {benchmark.version}: it has no score for "
            f"{primary!r}. Run it again on the current version to rank it.",
            {"id": run.id, "column": primary, "run_version": run.benchmark_version},
        )


def remove_from_leaderboard(ctx: Context, run_id: str) -> None:
    """Take a run off its leaderboard (owner/collaborator, web or CLI).

    Raises:
        NotFound: not on the leaderboard, or not visible.
    """
    run = access.require_run(ctx, run_id, Action.LEADERBOARD_MANAGE)
    # One DELETE that counts its rows: of two removals at once, the second waits for the
    # first, then finds nothing to delete and is refused (not audited a second time).
    removed = ctx.session.execute(delete(LeaderboardEntry).where(LeaderboardEntry.run_id == run.id))
    if not cast(CursorResult[Any], removed).rowcount:
        raise NotFound("The run is not on the leaderboard.", {"id": run.id})
    audit.record(
        ctx, audit.AuditAction.LEADERBOARD_REMOVE, "run", run.id, benchmark_id=run.benchmark_id
    )


def get_leaderboard(ctx: Context, benchmark_id: str, phase_id: str | None = None) -> Leaderboard:
    """The whole ranked leaderboard of a phase (the first phase by default).

    Raises:
        NotFound: the benchmark or phase is not visible.
    """
    return leaderboard_page(ctx, benchmark_id, phase_id).board


@dataclass(frozen=True)
class BoardPage:
    """Part of a phase's leaderboard, and where each of its rows stands in the order (the
    key of a cursor to the rows after it)."""

    board: Leaderboard
    standings: list[Standing]


def leaderboard_page(
    ctx: Context,
    benchmark_id: str,
    phase_id: str | None = None,
    limit: int | None = None,
    after: Standing | None = None,
) -> BoardPage:
    """`limit` rows (all when None) of a phase's ranked leaderboard (the first phase by
    default), after the row that stood at `after` when given; ranks count from the top.

    Raises:
        NotFound: the benchmark or phase is not visible.
        InvalidInput: limit outside 1..MAX_LIST, or `after` ranks by another number of
            columns than the board now has (its bundle changed them), or names a run no
            longer on a board that ranks by hidden columns.
    """
    benchmark = access.require_benchmark(ctx, benchmark_id, Action.BENCHMARK_READ)
    if limit is not None:
        check_window(limit, 0, MAX_LIST)
    query = select(Phase).where(Phase.benchmark_id == benchmark.id)
    query = query.where(Phase.id == phase_id) if phase_id else query.order_by(Phase.position)
    phase = ctx.session.scalars(query.limit(1)).first()
    if phase is None:
        raise NotFound("No such phase.", {"phase_id": phase_id})
    columns = columns_of(benchmark)
    if after is not None and len(after.scores) != len(columns):
        raise invalid(["cursor"], "is from before the leaderboard's columns changed; start over")
    entries = ranked_entries(ctx.session, phase.id, columns, limit, after)
    shown = [c for c in columns if not c.hidden]
    # A run keeps hidden what the version that scored it hid, as on its own page (`hidden_from`).
    custom = benchmark.format == "custom"
    versions = {entry.run.benchmark_version for entry in entries}
    unseen = {v: _hidden_keys(ctx, benchmark, v) if custom else frozenset() for v in versions}
    rows = [_row(entry, shown, unseen[entry.run.benchmark_version]) for entry in entries]
    board = Leaderboard(
        benchmark.id,
        phase.id,
        [c.key for c in shown],
        rows,
        {c.key: c.title for c in shown},
        {c.key: c.sorting for c in shown},
    )
    standings = [
        _unseen(entry.standing, columns, unseen[entry.run.benchmark_version]) for entry in entries
    ]
    return BoardPage(board, standings)


def _row(entry: Entry, shown: list[Column], unseen: frozenset[str]) -> Row:
    scores = {
        c.key: None if c.key in unseen else _ranked_score(entry.run.scores.get(c.key))
        for c in shown
    }
    return Row(
        entry.rank,
        entry.run.id,
        entrant_name(entry.run, entry.model_name),
        entry.submitted_by,
        scores,
        entry.run.score_edit is not None,
        entry.run.finished_at,
        settings.describe(entry.run.settings or {}),
    )


def _unseen(standing: Standing, columns: list[Column], unseen: frozenset[str]) -> Standing:
    """`standing` as a cursor may carry it: None for the scores its run's viewers may not see
    (`ranked_entries` reads them back from the run)."""
    if not unseen:
        return standing
    scores = zip(columns, standing.scores, strict=True)
    hidden = tuple(None if c.key in unseen else value for c, value in scores)
    return Standing(hidden, standing.finished_at, standing.run_id)


def _ranked_score(value: Any) -> float | None:
    """A score as the board ranks it: a finite number, else missing (None). A NaN stored on
    SQLite ranked last but was shown as NaN, which no JSON reader accepts."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        return value if math.isfinite(value) else None
    except OverflowError:  # an integer past a float's range
        return None


def entrant_name(run: Run, model_name: str | None) -> str:
    """Who a run evaluates: the model's name, or the uploaded submission's file."""
    if model_name:
        return model_name
    if run.submission:
        return f"Submission {run.submission.get('filename', '')}".strip()
    return run.model_id or "unknown"


def edit_run_score(ctx: Context, run_id: str, scores: dict[str, float], reason: str) -> None:
    """Correct a run's score by hand (owner, web app or CLI); audited and marked on the run.

    Raises:
        NotFound / PermissionDenied: not the owner, or a token or the agent asked.
        InvalidInput: unknown column, a value outside 0..1, or no reason.
        Conflict: the run has not completed.
    """
    run = access.require_run(ctx, run_id, Action.RUN_EDIT_SCORE)
    # Read, changed and written whole: an edit or a rescoring at the same moment waits here,
    # so neither writes over the other's scores or audits a `before` that was no longer so.
    ctx.session.refresh(run, with_for_update=True)
    if run.status != RunStatus.COMPLETED:
        # A run still going would write its computed score over the correction when it ends.
        raise Conflict(
            f"Only a completed run's score can be corrected; this run is {run.status}.",
            {"id": run.id},
        )
    benchmark = ctx.session.get(Benchmark, run.benchmark_id)
    assert benchmark is not None  # require_run found it
    known = {c.key for c in columns_of(benchmark)}
    # Bundle columns carry the scoring program's own units; accuracy is a fraction.
    bounded = benchmark.format != "custom"
    for column, value in scores.items():
        if column not in known:
            raise invalid(["scores", column], "unknown column")
        if not isinstance(value, int | float) or not math.isfinite(value):
            raise invalid(["scores", column], "must be a number")
        if bounded and not 0 <= value <= 1:
            raise invalid(["scores", column], "must be a number from 0 to 1")
    if not reason.strip():
        raise invalid(["reason"], "say why the score is corrected")
    require_text(reason, ["reason"])
    in_force = dict(run.scores)
    earlier = run.score_edit or {}
    run.score_edit = {
        "by": ctx.principal.user_id,
        "at": ctx.now().isoformat(),
        "before": earlier.get("before", in_force),  # the computed score, kept across edits
        "scores": {**_verdicts.edited_columns(earlier, in_force), **scores},
        "reason": reason.strip()[:1000],
    }
    run.scores = {**in_force, **scores}
    audit.record(
        ctx,
        audit.AuditAction.RUN_EDIT_SCORE,
        "run",
        run.id,
        before=in_force,
        scores=scores,
        reason=reason.strip(),
    )
