"""The `start_run` proposal kind: its arguments, its preview with the estimate, its execution."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from benchgen.core.context import Context
from benchgen.core.errors import Conflict
from benchgen.core.permissions import Action
from benchgen.services import access
from benchgen.services.chat import previews
from benchgen.services.chat._versions import hold_version
from benchgen.services.runs import launch
from benchgen.services.runs.settings import RunOptions, RunSettings, Subset
from benchgen.services.specs import parse


class RunArgs(BaseModel):
    """Arguments of a `start_run` proposal: the settings, subset and cache are part of what the
    user approves (they are in the canonical arguments the approval's hash covers)."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    benchmark_id: str = Field(max_length=40)
    model_id: str = Field(max_length=40)
    phase_id: str | None = Field(None, max_length=40)
    settings: RunSettings = Field(default_factory=RunSettings)
    subset: Subset | None = None
    cache: bool = False

    def options(self, max_credits: int | None = None) -> RunOptions:
        """The run's options, capped at `max_credits` when given."""
        return RunOptions(
            settings=self.settings, subset=self.subset, cache=self.cache, max_credits=max_credits
        )


def prepare(
    ctx: Context, arguments: dict[str, Any], agent_pick: bool
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The canonical arguments and the preview of a run; nothing is written.

    Raises:
        InvalidInput: bad arguments.
        NotFound: the benchmark or model is not visible to the principal.
        PermissionDenied: the principal may not launch runs now.
        Conflict: the phase is not open now (none named: no phase is).
    """
    spec = parse(RunArgs, arguments)
    row = access.require_benchmark(ctx, spec.benchmark_id, Action.RUN_LAUNCH)
    # Refused as starting it would be: a proposal with no phase open to take it only fails.
    estimate = launch.preview_run(ctx, row.id, spec.model_id, spec.phase_id, spec.options())
    preview: dict[str, Any] = {
        "benchmark_id": row.id,
        "benchmark_title": row.title,
        "model_id": estimate.model_id,
        "model_name": estimate.model_name,
        "phase_id": spec.phase_id,
        "agent_pick": agent_pick,
        "question_count": estimate.question_count,
        "estimated_credits": estimate.credits,
        "basis": estimate.basis,
        "settings": estimate.settings,
        "partial": estimate.partial,
    }
    preview["text"] = previews.run_text(preview)
    # The estimate the user saw is bound into the arguments: a run that would now cost more
    # (a price rise, added questions) is refused rather than spending beyond what was approved.
    # So is the version of the questions it counted: edited after the preview, the benchmark is
    # not what the user approved running.
    canonical = {**spec.model_dump(), "max_credits": estimate.credits, "version": row.version}
    return canonical, preview


def perform(ctx: Context, arguments: dict[str, Any]) -> dict[str, Any]:
    """Start exactly the approved run; `launch.start_run` checks every rule again.

    Raises:
        BenchGenError: whatever `launch.start_run` raises.
        Conflict: the benchmark changed after the preview, or the run would now cost more than
            the estimate shown.
    """
    if "version" in arguments:  # proposals from before runs were bound to it lack the key
        hold_version(ctx, arguments, Action.RUN_LAUNCH, exclusive=False)
    benchmark_id, model_id = arguments["benchmark_id"], arguments["model_id"]
    # Proposals made before runs had settings lack these keys: they ran with the defaults.
    approved = {k: v for k, v in arguments.items() if k not in ("max_credits", "version")}
    options = parse(RunArgs, approved).options(arguments["max_credits"])
    estimate = launch.estimate_run(ctx, benchmark_id, model_id, options)
    if estimate.credits > arguments["max_credits"]:
        raise Conflict(
            f"The run would now cost up to {estimate.credits} credits, more than the "
            f"{arguments['max_credits']} shown when it was approved; nothing started.",
            {"estimate": estimate.credits, "approved": arguments["max_credits"]},
        )
    run = launch.start_run(ctx, benchmark_id, model_id, arguments["phase_id"], options)
    return {"run_id": run.id, "estimated_cost": run.estimated_cost}
