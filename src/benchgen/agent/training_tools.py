"""The agent's training tools: read the user's datasets, trainable models, compute and training
jobs, and propose a training job. Each is one service call with the turn's credential."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field
from pydantic_ai import Tool

from benchgen.agent.state import TurnState, plain
from benchgen.agent.tools import Deps, Id, Limit, Title, propose_action
from benchgen.core.context import Context
from benchgen.services.datasets import datasets
from benchgen.services.training import bases, compute, jobs
from benchgen.services.training.plans import ComputeIn, HyperparametersIn

_DATASET_FIELDS = ("id", "name", "format", "row_count", "token_estimate", "created_at")
_JOB_FIELDS = (
    "id",
    "name",
    "status",
    "waiting_for",
    "job_type",
    "base_model_id",
    "base_model_name",
    "dataset_id",
    "dataset_name",
    "compute_pool",
    "total_steps",
    "steps_done",
    "last_loss",
    "estimated_credits",
    "credits_charged",
    "trained_model_id",
    "error",
    "created_at",
    "finished_at",
)
JobType = Annotated[Literal["lora", "sft"], Field(description="lora adapter or sft (full)")]


def list_datasets(ctx: Deps, limit: Limit = 50) -> Any:
    """List the user's datasets (training data they uploaded), newest first.

    Args:
        limit: how many (at most 100).
    """

    def work(c: Context) -> dict[str, Any]:
        # Without their preview rows: names and sizes are what choosing one needs.
        found = datasets.list_datasets(c, limit=limit)
        return {"datasets": [_pick(plain(d), _DATASET_FIELDS) for d in found]}

    return ctx.deps.call("list_datasets", {"limit": limit}, work, write=False)


def list_training_bases(ctx: Deps) -> Any:
    """List the models the user may use with whether each can be a training base, and if not
    why (only the operator's local models can be trained)."""

    def work(c: Context) -> dict[str, Any]:
        return {"bases": plain(bases.list_training_bases(c))}

    return ctx.deps.call("list_training_bases", {}, work, write=False)


def list_compute(ctx: Deps) -> Any:
    """List the compute this server offers for training (the CPU pool and each GPU type) with
    what is free right now."""

    def work(c: Context) -> dict[str, Any]:
        return {"pools": plain(compute.compute_inventory(c))}

    return ctx.deps.call("list_compute", {}, work, write=False)


def list_training_jobs(ctx: Deps, limit: Limit = 20) -> Any:
    """List the user's training jobs, newest first, with status, progress and credits.

    Args:
        limit: how many (at most 100).
    """

    def work(c: Context) -> dict[str, Any]:
        found = jobs.list_training_jobs(c, limit=limit)
        return {"training_jobs": [_pick(plain(job), _JOB_FIELDS) for job in found]}

    return ctx.deps.call("list_training_jobs", {"limit": limit}, work, write=False)


def training_status(ctx: Deps, training_job_id: Id | None = None) -> Any:
    """Say whether a training job is done: status, steps, last loss, what it waits for,
    credits, and the Trained model's id once it completed. Without an id, the newest job
    (use this for "is it done?" when the user's latest thing was a training job).

    Args:
        training_job_id: the job's id (tr_…); omit for the newest.
    """

    def work(c: Context) -> dict[str, Any]:
        if training_job_id is None:
            newest = jobs.list_training_jobs(c, limit=1)
            if not newest:
                return {"training_job": None, "message": "The user has no training jobs yet."}
            return {"training_job": _pick(plain(newest[0]), _JOB_FIELDS)}
        found = jobs.get_training_job(c, training_job_id)
        return {"training_job": _pick(plain(found), _JOB_FIELDS)}

    args = {"training_job_id": training_job_id}
    return ctx.deps.call("training_status", args, work, write=False)


def propose_training(
    ctx: Deps,
    base_model_id: Id,
    dataset_id: Id,
    job_type: JobType = "lora",
    hyperparameters: HyperparametersIn | None = None,
    compute: ComputeIn | None = None,
    name: Title | None = None,
) -> Any:
    """Propose a training job. The user sees the platform's full plan (job type, base model,
    dataset, hyperparameters, compute availability, estimated duration and credits) and
    decides; nothing starts before. Find the ids with list_training_bases and list_datasets;
    when the user left the model or dataset open, ask with `ask_user` first.

    Args:
        base_model_id: a trainable model's id (mdl_…).
        dataset_id: one of the user's datasets (ds_…).
        job_type: "lora" (an adapter, the default) or "sft" (a full fine-tune).
        hyperparameters: only what the user asked for (epochs, learning_rate, batch_size…);
            omit for the defaults.
        compute: {"gpu_type": "…", "gpus": n} for GPUs (see list_compute); omit for the CPU.
        name: the Trained model's name, when the user gave one.
    """
    arguments: dict[str, Any] = {
        "base_model_id": base_model_id,
        "dataset_id": dataset_id,
        "job_type": job_type,
    }
    if hyperparameters is not None:
        arguments["hyperparameters"] = hyperparameters.model_dump(exclude_unset=True)
    if compute is not None:
        arguments["compute"] = compute.model_dump(exclude_unset=True)
    if name is not None:
        arguments["name"] = name
    return propose_action(ctx.deps, "propose_training", "start_training", arguments)


def _pick(data: dict[str, Any], fields: tuple[str, ...]) -> dict[str, Any]:
    return {name: data[name] for name in fields if name in data}


TRAINING_TOOLS: list[Tool[TurnState]] = [
    Tool(function, takes_ctx=True)
    for function in (
        list_datasets,
        list_training_bases,
        list_compute,
        list_training_jobs,
        training_status,
        propose_training,
    )
]
