"""Judging again the answers of a completed run whose AI judging failed (the judge's endpoint
down, rate limited, a verdict it could not read): a job hands those answers, and only those, to
the benchmark's judge. The evaluated model is never asked again and the run is never charged
again; the judge's tokens are counted apart, as in the run's own judging pass."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import func, select

from benchgen.core.context import Context
from benchgen.core.errors import Conflict, PermissionDenied
from benchgen.core.permissions import Action
from benchgen.core.statuses import RunStatus
from benchgen.db.tables import AuditEvent, Benchmark, Run, RunResult
from benchgen.evals.scorers.extract import extract_final_answer
from benchgen.evals.scorers.verdict import errored
from benchgen.services import _enqueue, access, audit
from benchgen.services.benchmarks import judges
from benchgen.services.runs import _log_writer, _verdicts
from benchgen.services.runs.execution import PENDING

JOB_KIND = "rejudge"
# The owner's key pays for judging, and a launcher's model may word its replies to upset the
# judge: someone outside the team has a run's judging done again this many times (a new run
# counts against their daily runs instead).
OUTSIDER_REJUDGINGS = 3


@dataclass(frozen=True)
class Rejudging:
    """Answers handed back to the AI judge: the run's scores change once it has judged them."""

    run_id: str
    answers: int


@dataclass(frozen=True)
class JudgingState:
    """Where a run's AI judging stands: answers waiting for the judge, and answers whose
    judging failed (their verdict is an error although the model replied)."""

    waiting: int
    failed: int


def rejudge_run(ctx: Context, run_id: str) -> Rejudging:
    """Have the benchmark's AI judge judge again the answers of a completed run whose judging
    failed, in a job. Nothing else of the run changes until the judge has answered: then its
    summary and scores are computed again (a score its owner corrected by hand stays).

    Raises:
        NotFound: the run is not visible.
        PermissionDenied: the principal may not re-judge this run, may no longer run models
            on its benchmark, or the benchmark's judge is not open to them.
        Conflict: the run has not completed or was not scored by the AI judge, the benchmark
            has no judge any more, its answers are being judged again already, no answer's
            judging failed, or someone outside the benchmark's team had its judging done again
            `OUTSIDER_REJUDGINGS` times already.
    """
    run = access.require_run(ctx, run_id, Action.RUN_REJUDGE)
    # Two requests at once: the second waits here, then finds the answers waiting already.
    ctx.session.refresh(run, with_for_update=True)
    _check(ctx, run)
    failed = _failed_answers(ctx, run)
    # The judge reads the final answer in the reply, found again: a judge removed before the
    # first pass left its verdict without one.
    waiting = {
        position: (PENDING, 0.0, extract_final_answer(raw or ""), None)
        for position, raw in failed.items()
    }
    _verdicts.update_verdicts(ctx, run.id, waiting)
    _enqueue.enqueue(ctx, JOB_KIND, {"run_id": run.id})
    _log_writer.append(ctx, run.id, f"Judging again: {len(failed)} answers whose judging failed")
    audit.record(ctx, audit.AuditAction.RUN_REJUDGE, "run", run.id, answers=len(failed))
    return Rejudging(run.id, len(failed))


def rejudgeable(ctx: Context, run_id: str) -> int:
    """How many answers `rejudge_run` would hand to the judge now; 0 where it would refuse
    (pages offer only the controls that will work; it checks again when one is used).

    Raises:
        NotFound: the run is not visible.
    """
    run = access.require_run(ctx, run_id, Action.RUN_READ)
    if not access.can(ctx, Action.RUN_REJUDGE, ctx.session.get(Benchmark, run.benchmark_id), run):
        return 0
    try:
        _check(ctx, run)
        return len(_failed_answers(ctx, run))
    except (PermissionDenied, Conflict):
        return 0


def judging_state(ctx: Context, run_id: str) -> JudgingState:
    """How many of the run's answers wait for the AI judge, and how many failed their judging.

    Raises:
        NotFound: the run is not visible.
    """
    run = access.require_run(ctx, run_id, Action.RUN_READ)
    if run.scoring.get("method") != "judge":
        return JudgingState(0, 0)
    return JudgingState(_count(ctx, run, PENDING), _count(ctx, run, "error"))


def finish_rejudging(ctx: Context, run_id: str) -> None:
    """Compute the run's summary and scores again from its verdicts, old and new (system
    principal: the re-judging job, once the judge has answered)."""
    access.require(ctx, Action.RUN_EXECUTE)
    run = _locked(ctx, run_id)
    if run is None:
        return
    _verdicts.summarise(ctx, run)
    failed = _count(ctx, run, "error")
    _log_writer.append(ctx, run.id, f"Judged again: {failed} answers still without a verdict")


def abandon_rejudging(ctx: Context, run_id: str, error: str) -> None:
    """The re-judging job kept failing: the answers still waiting have failed their judging
    again, and the run's figures count them so (system principal)."""
    access.require(ctx, Action.RUN_EXECUTE)
    run = _locked(ctx, run_id)
    if run is None:
        return
    rows = ctx.session.execute(
        select(RunResult.position, RunResult.extracted).where(
            RunResult.run_id == run.id, RunResult.outcome == PENDING
        )
    )
    reason = f"the judge failed: {error}"[:2000]
    _verdicts.update_verdicts(ctx, run.id, {p: errored(reason, e) for p, e in rows})
    _verdicts.summarise(ctx, run)
    _log_writer.append(ctx, run.id, f"Judging again failed: {error[:300]}")


def _locked(ctx: Context, run_id: str) -> Run | None:
    """The run, read afresh and held: a score correction committed meanwhile must be seen, or
    the summary computed again would write over it (`set_summary` keeps `score_edit`)."""
    return ctx.session.get(Run, run_id, with_for_update=True, populate_existing=True)


def _check(ctx: Context, run: Run) -> None:
    """Refuse unless this principal may have the run's failed judging done again now."""
    if run.status != RunStatus.COMPLETED:
        raise Conflict(
            f"Only a completed run's answers can be judged again; this one is {run.status}.",
            {"id": run.id},
        )
    if run.scoring.get("method") != "judge":
        raise Conflict(
            "This run was not scored by the AI judge, so no judging of it can have failed "
            "(rescoring applies other scoring without calling a model).",
            {"id": run.id},
        )
    benchmark = ctx.session.get(Benchmark, run.benchmark_id)
    assert benchmark is not None  # require_run found it
    # Judging again calls the judge as launching the run did: the same person must still be
    # allowed to launch, and the judge still open to them.
    if not access.can(ctx, Action.RUN_LAUNCH, benchmark):
        raise PermissionDenied(
            "You may no longer run models on this benchmark, so its AI judge is not yours to use."
        )
    judges.require_usable(ctx, benchmark)
    outsider = not access.can(ctx, Action.BENCHMARK_READ_KEY, benchmark)
    if outsider and _rejudgings(ctx, run) >= OUTSIDER_REJUDGINGS:
        raise Conflict(
            f"This run's judging was done again {OUTSIDER_REJUDGINGS} times already, the most "
            "the benchmark's owner pays for; launch a new run to be judged afresh.",
            {"id": run.id},
        )
    if _count(ctx, run, PENDING):
        raise Conflict(
            "This run's answers are being judged again already; its scores change once the "
            "judge has answered.",
            {"id": run.id},
        )


def _failed_answers(ctx: Context, run: Run) -> dict[int, str | None]:
    """The replies, by position, whose judging failed: the model replied (no error of its own)
    and the verdict is an error, which only the judging pass gives a reply on this scoring."""
    rows = ctx.session.execute(
        select(RunResult.position, RunResult.raw).where(
            RunResult.run_id == run.id, RunResult.outcome == "error", RunResult.error.is_(None)
        )
    )
    failed = {position: raw for position, raw in rows}
    if not failed:
        raise Conflict(
            "No answer of this run failed its AI judging: there is nothing to judge again.",
            {"id": run.id},
        )
    return failed


def _rejudgings(ctx: Context, run: Run) -> int:
    """How many times the run's judging was done again: each is in the audit log."""
    query = select(func.count()).where(
        AuditEvent.object_type == "run",
        AuditEvent.object_id == run.id,
        AuditEvent.action == audit.AuditAction.RUN_REJUDGE,
    )
    return int(ctx.session.scalar(query) or 0)


def _count(ctx: Context, run: Run, outcome: str) -> int:
    """Answers of the run with `outcome` whose reply came back (the judge's part, not the
    model's failures)."""
    query = select(func.count()).where(
        RunResult.run_id == run.id, RunResult.outcome == outcome, RunResult.error.is_(None)
    )
    return int(ctx.session.scalar(query) or 0)
