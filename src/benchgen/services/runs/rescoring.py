"""Rescoring: re-apply scoring to a run's saved answers, never calling a model. A dry run shows
new scores and a per-question diff; applying stores them. Large runs go in chunks, each chunk
its own transaction, so that other writers wait for one chunk, never for the whole run."""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any

from sqlalchemy import Connection, Engine, Select, Text, case, cast, func, null, select
from sqlalchemy.sql.elements import ColumnElement

from benchgen.core.context import Context
from benchgen.core.errors import Conflict, InvalidInput, PermissionDenied
from benchgen.core.permissions import Action
from benchgen.core.statuses import RunStatus
from benchgen.db.json_rows import json_rows
from benchgen.db.session import connection_apart
from benchgen.db.tables import Benchmark, LeaderboardEntry, Question, Run, RunResult
from benchgen.evals.aggregate import Tally
from benchgen.evals.scorers import registry
from benchgen.evals.scorers.registry import StoredScorer
from benchgen.evals.types import Scored
from benchgen.services import access, audit
from benchgen.services.benchmarks import scoring
from benchgen.services.runs import _verdicts, rejudging
from benchgen.services.runs.execution import LOGPROB

# A diff of a million answers helps nobody and costs memory: show the first ones and the count.
MAX_CHANGES_SHOWN = 1000
# Rows per chunk. Only a chunk's UPDATE holds SQLite's write lock (a few tenths of a second for
# 25k rows), so another writer waits well under a second; smaller chunks cost more commits.
CHUNK_ROWS = 25_000
# Characters of replies per chunk at most (the rest of a row is a small share): a chunk of long
# replies holds fewer rows, so that its JSON document stays small beside the 1 GB that SQLite and
# PostgreSQL allow a value, and the memory a chunk takes stays bounded.
REPLY_CHARS_PER_CHUNK = 32 * 2**20


@dataclass(frozen=True)
class Rescore:
    """What rescoring did or would do. `changes` lists the first MAX_CHANGES_SHOWN changed
    answers; it is empty for viewers who may not see per-question correctness (they get the
    count and aggregates only)."""

    run_id: str
    applied: bool
    scoring: dict[str, Any]
    before: dict[str, Any]
    after: dict[str, Any]
    changed_count: int
    changes: list[dict[str, Any]]


def rescore_run(
    ctx: Context,
    run_id: str,
    settings: dict[str, Any] | None = None,
    apply: bool = False,
    chunk_rows: int = CHUNK_ROWS,
) -> Rescore:
    """Rescore saved answers with the run's settings, or with `settings` (owner/collaborators).

    A run of more answers than `chunk_rows` is read in chunks of that many rows (fewer where
    long replies would outgrow REPLY_CHARS_PER_CHUNK), each in a transaction of its own (the
    caller's is committed once the checks pass), and applied chunk by chunk. Applying claims
    the run first by storing the new settings on it; a later apply with other settings takes
    the claim over and this one stops with Conflict. Until the last chunk, readers see some
    answers rescored and the old summary; if the process dies meanwhile, applying again (the
    run already has the new settings) finishes the job.

    Raises:
        NotFound: the run is not visible.
        PermissionDenied: other settings from someone outside the benchmark's team, or an
            apply from them to a run on a leaderboard.
        InvalidInput: bad settings.
        Conflict: the run has not finished, has no saved answer, is on a custom benchmark or
            has answers being judged again, the settings need a model (AI judge), the run has
            answers to questions the benchmark no longer has, or another apply took over.
    """
    run, chosen, detail = _checked(ctx, run_id, settings, lock=apply)
    if apply:
        _require_board_manager(ctx, run)
    before = dict(run.summary)
    with _collector_paused():
        rescored = _rescore(ctx, run, chosen, apply, chunk_rows)
    if apply:
        _store(ctx, run, chosen, rescored)
        after = dict(run.summary)
    else:  # what applying would store, pass@k and majority vote included
        tally = rescored.tally.summary(_tags_of)
        after = _verdicts.with_sampling(ctx.session, run, tally, chosen)
    return Rescore(
        run.id,
        apply,
        chosen,
        scoring.visible_summary(before, detail),
        scoring.visible_summary(after, detail),
        rescored.changed_count,
        rescored.changes if detail else [],
    )


def offered_scoring(ctx: Context, run_id: str) -> dict[str, Any] | None:
    """The settings a run's page offers to rescore it with: its benchmark's scoring for future
    runs; None on a custom benchmark, which its bundle's programs score.

    Raises:
        NotFound: the run is not visible.
    """
    run = access.require_run(ctx, run_id, Action.RUN_READ)
    benchmark = ctx.session.get(Benchmark, run.benchmark_id)
    assert benchmark is not None  # require_run found it
    return None if benchmark.format == "custom" else scoring.settings_for(benchmark)


def can_rescore(ctx: Context, run_id: str, settings: dict[str, Any] | None = None) -> bool:
    """Whether `rescore_run` would take the run up with these settings now: pages offer only
    the controls that will work (rescoring checks again when one is used).

    Raises:
        NotFound: the run is not visible.
    """
    try:
        _checked(ctx, run_id, settings)
    except (PermissionDenied, Conflict, InvalidInput):
        return False
    return True


def _checked(
    ctx: Context, run_id: str, settings: dict[str, Any] | None, lock: bool = False
) -> tuple[Run, dict[str, Any], bool]:
    """The run, the settings to apply, and whether the viewer sees per-question detail; the
    run's row locked when `lock` (applying), as re-judging locks it."""
    run = access.require_run(ctx, run_id, Action.RUN_RESCORE)
    if lock:
        # A re-judging asked at the same time waits here, then finds the new scoring (not the
        # judge's) and refuses; or this waits for it, then finds its answers being judged.
        ctx.session.refresh(run, with_for_update=True)
    benchmark = ctx.session.get(Benchmark, run.benchmark_id)
    assert benchmark is not None  # require_run found it
    if benchmark.format == "custom":
        raise Conflict(
            "Runs on custom benchmarks are scored by their bundle's program: upload a fixed "
            "bundle as a new version and run or submit again (the agent can prove a fix on a "
            "scratch copy first)."
        )
    if settings is not None:
        access.require(ctx, Action.RUN_RESCORE_SETTINGS, benchmark, run)
    chosen = scoring.validated(benchmark.format, settings) if settings else dict(run.scoring)
    if run.status not in (RunStatus.COMPLETED, RunStatus.CANCELLED):
        raise Conflict(f"Only finished runs can be rescored; this one is {run.status}.")
    # A run cancelled before any answer came back: applying would give it an empty summary
    # and a score of none, which its page would show as if it had been scored.
    if not _has_answers(ctx, run.id):
        raise Conflict("This run stopped before any answer came back: there is nothing to rescore.")
    # The judge's verdicts would be recorded under the new scoring, and the answers it has yet
    # to judge scored by another method. (A cancelled run's answers left waiting are judged by
    # nobody: rescoring is how they get a verdict.)
    if run.status == RunStatus.COMPLETED and rejudging.judging_state(ctx, run.id).waiting:
        raise Conflict(
            "This run's answers are being judged again by the AI judge; rescore it once that "
            "is done (its page shows when).",
            {"id": run.id},
        )
    if chosen.get("method") == "judge":
        raise Conflict("Rescoring with the AI judge would call a model; rescoring never does.")
    return run, chosen, access.can(ctx, Action.RUN_READ_DETAIL, benchmark, run)


def _require_board_manager(ctx: Context, run: Run) -> None:
    """Refuse applying to a ranked run unless the principal manages the leaderboard: after a
    scorer changes, its launcher could dry-run, apply only what raises their rank, and leave
    the runs ranked beside theirs scored the old way."""
    listed = select(LeaderboardEntry.id).where(LeaderboardEntry.run_id == run.id)
    if ctx.session.scalar(listed) is None:
        return
    benchmark = ctx.session.get(Benchmark, run.benchmark_id)
    if not access.can(ctx, Action.LEADERBOARD_MANAGE, benchmark, run):
        raise PermissionDenied(
            "This run is on a leaderboard: only the benchmark's owner and collaborators may "
            "apply a rescoring to it, so that every run ranked there is scored alike. A dry "
            "run (without apply) shows what it would change.",
            {"id": run.id},
        )


def _has_answers(ctx: Context, run_id: str) -> bool:
    first = select(RunResult.position).where(RunResult.run_id == run_id).limit(1)
    return ctx.session.scalar(first) is not None


def _last_answer(ctx: Context, run: Run) -> int | None:
    """The position of the run's last stored answer (None without any), checked to have its
    question before any chunk is written: an apply must not stop half-way for this."""
    # Questions sit at positions 0..n-1, so comparing the largest positions suffices.
    last_answer: int | None = ctx.session.scalar(
        select(func.max(RunResult.position)).where(RunResult.run_id == run.id)
    )
    last_question = ctx.session.scalar(
        select(func.max(Question.position)).where(Question.benchmark_id == run.benchmark_id)
    )
    if last_answer is not None and (last_question is None or last_answer > last_question):
        raise Conflict("The run has answers to questions its benchmark no longer has.")
    return last_answer


@dataclass
class _Pass:
    """One pass over the stored answers: the new summary so far and what changed."""

    scorer: StoredScorer
    chunked: bool  # each chunk in its own transaction
    tally: Tally[str] = field(default_factory=Tally)
    changed_count: int = 0
    changes: list[dict[str, Any]] = field(default_factory=list)

    def add(self, rows: Sequence[Sequence[Any]]) -> dict[int, Scored]:
        """Score one chunk; the new verdicts of the answers whose verdict changed."""
        verdicts: list[Scored] = []
        changed: dict[int, Scored] = {}
        score, changes = self.scorer, self.changes
        for row in rows:
            position, raw, error, letters, outcome, old_score, extracted, _, answers, choices = row
            verdict = score(raw, error, letters, answers, choices)
            verdicts.append(verdict)
            if (
                verdict.outcome != outcome
                or verdict.score != old_score
                or verdict.extracted != extracted
            ):
                changed[position] = verdict
                if len(changes) < MAX_CHANGES_SHOWN:
                    changes.append(_change(position, (outcome, old_score, extracted), verdict))
        self.tally.add_all(verdicts, [row[7] for row in rows])
        self.changed_count += len(changed)
        return changed


def _tags_of(stored: str) -> list[str]:
    tags: list[str] = json.loads(stored)
    return tags


def _change(position: int, old: tuple[str, float, str | None], new: Scored) -> dict[str, Any]:
    return {
        "position": position,
        "before": {"outcome": old[0], "score": old[1], "extracted": old[2]},
        "after": {"outcome": new.outcome, "score": new.score, "extracted": new.extracted},
    }


@dataclass(frozen=True)
class _Reader:
    """Reads a run's stored answers with their questions' keys and tags, a chunk at a time;
    each row a list: position, reply, error, letter log-probs, the stored verdict (outcome,
    score, extracted), the tags' JSON text, the accepted answers and the choices."""

    run_id: str
    benchmark_id: str
    logprobs: bool
    chunk_rows: int

    def read(self, connection: Connection, after: int) -> list[list[Any]]:
        """The next chunk after position `after`, in the connection's transaction."""
        return _decoded(self._document(connection, after))

    def chunks(
        self, engine: Engine, first: list[list[Any]], last: int | None
    ) -> Iterator[list[list[Any]]]:
        """`first`, then the chunks after it up to the answer at position `last`, each read in
        a transaction of its own: in another thread, on a connection of its own, while the
        chunk before is scored (the database builds one chunk's document while Python scores
        the other)."""
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="rescore-read") as ahead:
            rows = first
            while rows:
                more = rows[-1][0] != last
                if more:
                    following = ahead.submit(self._document_apart, engine, rows[-1][0])
                yield rows
                if not more:
                    return
                # Decoded here, not in the reading thread: the values are then made on the
                # core that scores them (a million answers scored 0.5-1 s sooner, measured).
                rows = _decoded(following.result())

    def _document(self, connection: Connection, after: int) -> str:
        query = json_rows(self._query(after), connection.dialect.name)
        document: str = connection.execute(query).scalar_one()
        return document

    def _document_apart(self, engine: Engine, after: int) -> str:
        with connection_apart(engine) as connection:
            return self._document(connection, after)

    def _query(self, after: int) -> Select[Any]:
        # Log-probs are decoded only for the method that reads them: JSON per row is costly.
        letters = RunResult.letter_logprobs if self.logprobs else null()
        question = (Question.benchmark_id == self.benchmark_id) & (
            Question.position == RunResult.position
        )
        return (
            select(
                RunResult.position,
                RunResult.raw,
                RunResult.error,
                letters,
                RunResult.outcome,
                RunResult.score,
                RunResult.extracted,
                cast(Question.tags, Text),
                Question.answers,
                Question.choices,
            )
            .join(Question, question)
            .where(
                RunResult.run_id == self.run_id,
                RunResult.position > after,
                RunResult.position <= self._chunk_end(after),
            )
        )

    def _chunk_end(self, after: int) -> ColumnElement[Any]:
        """The last position of the chunk after `after`: `chunk_rows` answers, fewer where
        their replies outgrow REPLY_CHARS_PER_CHUNK (one answer at least)."""
        following = (
            select(RunResult.position, RunResult.raw)
            .where(RunResult.run_id == self.run_id, RunResult.position > after)
            .order_by(RunResult.position)
            .limit(self.chunk_rows)
            .subquery()
        )
        replies = func.coalesce(func.length(following.c.raw), 0)
        # Most chunks' replies fit the budget: their end is then found by one aggregate, and
        # the running sum (three times the aggregate's cost, measured) is left unevaluated.
        fits = func.sum(replies) < REPLY_CHARS_PER_CHUNK
        whole = select(case((fits, func.max(following.c.position)))).scalar_subquery()
        before = func.sum(replies).over(order_by=following.c.position, rows=(None, -1))
        sized = select(following.c.position, before.label("before")).subquery()
        within = func.coalesce(sized.c.before, 0) < REPLY_CHARS_PER_CHUNK
        cut = select(func.max(sized.c.position)).where(within).scalar_subquery()
        return func.coalesce(whole, cut)


def _decoded(document: str) -> list[list[Any]]:
    rows: list[list[Any]] = json.loads(document)
    rows.sort(key=itemgetter(0))  # by position: the database builds the document in any order
    return rows


def _rescore(
    ctx: Context, run: Run, settings: dict[str, Any], apply: bool, chunk_rows: int
) -> _Pass:
    """Score every stored answer; write the changed verdicts when applying.

    Raises:
        Conflict: the run has answers to questions its benchmark no longer has.
    """
    last = _last_answer(ctx, run)
    reader = _Reader(run.id, run.benchmark_id, settings.get("method") == LOGPROB, chunk_rows)
    connection = ctx.session.connection()
    rows = reader.read(connection, -1)
    chunked = bool(rows) and rows[-1][0] != last
    if chunked:
        if apply:
            run.scoring = settings  # the claim: a later apply with other settings stops this one
        ctx.session.commit()  # the caller's transaction: release the write lock from here on
    rescored = _Pass(registry.stored_scorer(settings), chunked)
    for chunk in reader.chunks(connection.engine, rows, last):
        changed = rescored.add(chunk)
        if apply and changed:
            _write(ctx, run.id, settings, changed, chunked)
    return rescored


def _write(
    ctx: Context, run_id: str, settings: dict[str, Any], verdicts: dict[int, Scored], own: bool
) -> None:
    """Store one chunk's changed verdicts, in a transaction of their own when `own`."""
    if own:
        _require_claim(ctx, run_id, settings)
    _verdicts.update_verdicts(ctx, run_id, verdicts)
    if own:
        ctx.session.commit()


def _require_claim(ctx: Context, run_id: str, settings: dict[str, Any]) -> None:
    # Locks the run's row on PostgreSQL (SQLite's write lock is already held): a claim taken
    # over commits before or after this chunk, never during it.
    current = ctx.session.scalar(select(Run.scoring).where(Run.id == run_id).with_for_update())
    if current != settings:
        raise Conflict("Another rescoring of this run was applied meanwhile; it goes on.")


def _store(ctx: Context, run: Run, settings: dict[str, Any], rescored: _Pass) -> None:
    if rescored.chunked:
        _require_claim(ctx, run.id, settings)
    run.scoring = settings
    _verdicts.set_summary(run, rescored.tally.summary(_tags_of))
    audit.record(
        ctx,
        audit.AuditAction.RUN_RESCORE,
        "run",
        run.id,
        scoring=settings,
        changed=rescored.changed_count,
    )


@contextmanager
def _collector_paused() -> Iterator[None]:
    # Rescoring a million answers makes millions of small objects; the cyclic garbage
    # collector would walk them again and again (a third of the time, measured) although
    # nothing made here forms a cycle.
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
