"""Training job rows for the training services, without permission checks: the acting user's
own job, and closing a job with its credits settled (the services check access first)."""

from __future__ import annotations

import logging

from benchgen.core.context import Context
from benchgen.core.errors import NotFound
from benchgen.core.statuses import TrainingStatus
from benchgen.db.tables import TrainingEvent, TrainingJob
from benchgen.services._artifacts import store_for
from benchgen.services.accounts import _ledger

log = logging.getLogger(__name__)


def close_job(ctx: Context, row: TrainingJob, status: TrainingStatus, line: str) -> None:
    """End a job: completed or cancelled jobs pay for the steps that ran, failed ones nothing
    (the platform could not deliver), and the rest of the reservation comes back. Its
    resumable checkpoint is deleted."""
    cost = 0 if status == TrainingStatus.FAILED else row.steps_done * row.price_per_step
    if row.reservation_id:
        if status == TrainingStatus.FAILED:
            _ledger.refund_credits(ctx, row.reservation_id, f"training {row.id} failed")
        else:
            _ledger.settle_credits(ctx, row.reservation_id, cost)
    row.status, row.credits_charged = status, min(cost, row.estimated_credits)
    row.finished_at, row.waiting_for = ctx.now(), ""
    if row.checkpoint_key:
        # Only an unfinished job resumes from it: kept, a cancelled or failed job's newest
        # checkpoint (a full fine-tune's: every weight and AdamW's moments) stayed for ever.
        # A store that fails here must not keep the job from ending: the files stay, logged.
        try:
            store_for(ctx.settings).delete_prefix(row.checkpoint_key)
        except Exception as exc:  # any store's failure, S3's included
            log.warning("job %s: its checkpoint was not deleted: %s", row.id, type(exc).__name__)
        row.checkpoint_key = None
    ctx.session.add(TrainingEvent(job_id=row.id, at=ctx.now(), line=line))


def own_job(ctx: Context, training_id: str) -> TrainingJob:
    """One of the acting user's live training jobs, for services that checked access.

    Raises:
        NotFound: missing, deleted or someone else's (answered alike).
    """
    row = owned_job(ctx, training_id)
    if row is None:
        raise NotFound("No such training job.", {"id": training_id})
    return row


def owned_job(ctx: Context, training_id: str) -> TrainingJob | None:
    """The acting user's live job `training_id`, or None (missing, deleted, someone else's)."""
    row = ctx.session.get(TrainingJob, training_id)
    mine = row is not None and row.owner_id == ctx.principal.user_id
    return row if mine and row is not None and row.deleted_at is None else None
