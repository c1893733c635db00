"""What the acting person may do to one run, so a page offers only the controls that will work
(the services still decide again when a control is used)."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select

from benchgen.core.context import Context
from benchgen.core.permissions import Action
from benchgen.core.statuses import RUN_ACTIVE
from benchgen.db.tables import Benchmark, LeaderboardEntry
from benchgen.services import access
from benchgen.services.runs import rejudging, rescoring


@dataclass(frozen=True)
class RunControls:
    """The run's benchmark as this person may name it, and the actions open to them on it."""

    benchmark_title: str | None  # None when the benchmark is no longer visible to them
    can_cancel: bool
    can_manage_leaderboard: bool
    can_edit_score: bool
    can_rescore: bool  # with the benchmark's scoring for future runs (a dry run first)
    rejudgeable: int  # answers whose AI judging failed that this person may have judged again
    awaiting_judge: int  # answers of the run waiting for the AI judge
    on_leaderboard: bool
    edit_reason: str | None  # why the score was corrected, for the benchmark's team


def run_controls(ctx: Context, run_id: str) -> RunControls:
    """The controls a run's page shows the acting principal.

    Raises:
        NotFound: the run is not visible to the principal.
    """
    run = access.require_run(ctx, run_id, Action.RUN_READ)
    benchmark = ctx.session.get(Benchmark, run.benchmark_id)
    assert benchmark is not None  # require_run found it
    visible = access.can(ctx, Action.BENCHMARK_READ, benchmark)
    manage = access.can(ctx, Action.LEADERBOARD_MANAGE, benchmark, run)
    listed = ctx.session.scalar(
        select(LeaderboardEntry.id).where(LeaderboardEntry.run_id == run.id)
    )
    reason = run.score_edit.get("reason") if run.score_edit and manage else None
    return RunControls(
        benchmark_title=benchmark.title if visible else None,
        can_cancel=run.status in RUN_ACTIVE and access.can(ctx, Action.RUN_CANCEL, benchmark, run),
        can_manage_leaderboard=manage,
        can_edit_score=access.can(ctx, Action.RUN_EDIT_SCORE, benchmark, run),
        can_rescore=rescoring.can_rescore(ctx, run.id, rescoring.offered_scoring(ctx, run.id)),
        rejudgeable=rejudging.rejudgeable(ctx, run.id),
        awaiting_judge=rejudging.judging_state(ctx, run.id).waiting,
        on_leaderboard=listed is not None,
        edit_reason=str(reason) if reason is not None else None,
    )
