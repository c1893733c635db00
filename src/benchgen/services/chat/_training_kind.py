"""The `start_training` proposal kind: its canonical arguments, its preview (the platform's own
plan) and its execution, which plans again under the approving turn's credential."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from benchgen.core.context import Context
from benchgen.core.errors import Conflict, InsufficientCredits
from benchgen.services.specs import parse
from benchgen.services.training import jobs, plans
from benchgen.services.training.plans import TrainingIn

# Bound into the canonical arguments beside the request itself: what the user saw it would cost.
MAX_CREDITS = "max_credits"


def prepare(ctx: Context, arguments: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The canonical arguments and the preview of a training request; nothing is written.

    Raises:
        PermissionDenied: the turn's credential does not carry the train scope.
        NotFound: the model or dataset is not one the user may use.
        InvalidInput: see `plans.plan_training`.
        InsufficientCredits: the balance cannot cover the plan now, so approving it could
            only fail.
    """
    plan = plans.plan_training(ctx, arguments)  # the train scope is checked before all else
    spec = parse(TrainingIn, arguments)
    if not plan.affordable:
        raise InsufficientCredits(plan.estimated_credits, plan.balance)
    # A7: the preview is the plan the platform computed from exactly these arguments; the
    # language model wrote none of its text (names are one-line titles, so no value can draw
    # a fake line into it).
    preview = {**asdict(plan), "text": plan.text()}
    # A8: the hash covers the validated request in full (defaults filled in) and the credits
    # shown, so a later price rise cannot spend more than what was approved.
    canonical = {**spec.model_dump(mode="json"), MAX_CREDITS: plan.estimated_credits}
    return canonical, preview


def perform(ctx: Context, arguments: dict[str, Any]) -> dict[str, Any]:
    """Launch exactly the approved training request through `jobs.start_training`, which checks
    every rule again now (A9): the train scope, the model and dataset still there and usable,
    the compute pool, the memory limit and the credits, which it reserves.

    Raises:
        BenchGenError: whatever `plans.plan_training` or `jobs.start_training` raises.
        Conflict: the plan would now cost more than the credits shown when it was approved.
    """
    approved = arguments[MAX_CREDITS]
    request = {key: value for key, value in arguments.items() if key != MAX_CREDITS}
    plan = plans.plan_training(ctx, request)
    if plan.estimated_credits > approved:
        raise Conflict(
            f"The training would now cost {plan.estimated_credits} credits, more than the "
            f"{approved} shown when it was approved; nothing started.",
            {"estimate": plan.estimated_credits, "approved": approved},
        )
    job = jobs.start_training(ctx, request)
    return {
        "training_job_id": job.id,
        "status": str(job.status),
        "estimated_credits": job.estimated_credits,
        "waiting_for": job.waiting_for,
    }
