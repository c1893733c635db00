"""`plan_training`: one check of a training request behind every door (API, web, CLI, agent),
giving the full plan a person approves: job type, base model, dataset, hyperparameters,
compute with what is free now, estimated duration and credits."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

from benchgen.core.context import Context
from benchgen.core.errors import invalid
from benchgen.core.permissions import Action
from benchgen.core.text import MAX_TITLE, plural
from benchgen.db.tables import Dataset
from benchgen.services import access, models
from benchgen.services.accounts import _ledger
from benchgen.services.datasets import datasets
from benchgen.services.specs import BoundedTitle, finite_number, not_bool, parse
from benchgen.services.training import bases, compute, durations
from benchgen.services.training.bases import Base
from benchgen.training.sizing import LEARNED_POSITIONS, estimate_peak_bytes, matches_module
from benchgen.training.spec import Hyperparameters, JobType, total_steps

ModuleName = Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_.]{0,63}$")]


class HyperparametersIn(BaseModel):
    """Training settings with their ranges; anything left out takes the default. The LoRA
    fields apply to `lora` jobs only."""

    model_config = ConfigDict(extra="forbid")

    epochs: int = Field(1, ge=1, le=100, description="Passes over the dataset")
    learning_rate: float = Field(2e-4, gt=0, le=0.1)
    batch_size: int = Field(4, ge=1, le=256, description="Rows per optimizer step")
    max_seq_length: int = Field(512, ge=16, le=8192, description="Tokens kept per row")
    lora_rank: int = Field(8, ge=1, le=256)
    lora_alpha: int = Field(16, ge=1, le=1024)
    lora_dropout: float = Field(0.05, ge=0, le=0.5)
    target_modules: list[ModuleName] = Field(
        default_factory=lambda: ["q_proj", "v_proj"],
        min_length=1,
        max_length=32,
        description="Module names LoRA adapts (q_proj, k_proj, v_proj, o_proj, …)",
    )
    _whole = field_validator(
        "epochs", "batch_size", "max_seq_length", "lora_rank", "lora_alpha", mode="before"
    )(not_bool)
    _real = field_validator("learning_rate", "lora_dropout", mode="before")(finite_number)

    def frozen(self) -> Hyperparameters:
        """As the engine's plain value."""
        fields = self.model_dump()
        return Hyperparameters(**{**fields, "target_modules": tuple(self.target_modules)})


class ComputeIn(BaseModel):
    """Where to train: the CPU pool (no `gpu_type`), or `gpus` GPUs of one type."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    gpu_type: str | None = Field(None, max_length=100, examples=["H200"])
    gpus: int = Field(1, ge=1, le=16)
    _whole = field_validator("gpus", mode="before")(not_bool)

    @field_validator("gpus")
    @classmethod
    def _gpus_need_a_type(cls, gpus: int, info: ValidationInfo) -> int:
        # Without a GPU type the job goes to the CPU pool, one slot: a larger count would be
        # dropped unseen. One stays valid, as a whole request's dump (the agent's) carries it.
        if gpus > 1 and "gpu_type" in info.data and info.data["gpu_type"] is None:
            raise PydanticCustomError(
                "gpus_without_type",
                f"{gpus} GPUs need a gpu_type: without one the job trains on the CPU",
            )
        return gpus


class TrainingIn(BaseModel):
    """A training job to plan or launch."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    job_type: Literal["lora", "sft"] = Field("lora", description="LoRA adapter or full fine-tune")
    base_model_id: str = Field(max_length=40, examples=["mdl_…"])
    dataset_id: str = Field(max_length=40, examples=["ds_…"])
    hyperparameters: HyperparametersIn = Field(default_factory=HyperparametersIn)
    compute: ComputeIn = Field(default_factory=ComputeIn)
    name: BoundedTitle | None = Field(None, description="The Trained model's name")


@dataclass(frozen=True)
class ComputePlan:
    """The compute a plan asks for and how it stands right now."""

    pool: str
    gpu_type: str | None
    count: int
    total: int
    free: int
    queued: int
    starts_now: bool
    availability: str


@dataclass(frozen=True)
class TrainingPlan:
    """Everything a person approves before a training job launches."""

    name: str
    job_type: str
    base_model_id: str
    base_model_name: str
    base_param_count: int
    dataset_id: str
    dataset_name: str
    dataset_rows: int
    dataset_tokens: int
    hyperparameters: dict[str, Any]
    total_steps: int
    compute: ComputePlan
    memory_estimate_mib: int
    memory_limit_mib: int
    estimated_seconds: int
    price_per_step: int
    estimated_credits: int
    balance: int
    affordable: bool

    def text(self) -> str:
        """The plan in plain lines (the agent's preview, the CLI's answer)."""
        hyper = ", ".join(f"{k}={_shown(v)}" for k, v in self.hyperparameters.items())
        return "\n".join(
            [
                # Names quoted and ids beside them: two datasets (or bases) named alike, or a
                # name with a character that prints as nothing, read as one in the preview.
                f"Train {self.name!r}: {self.job_type} of {self.base_model_name!r} "
                f"({self.base_model_id}, {self.base_param_count / 1e6:.0f}M parameters)",
                f"Dataset: {self.dataset_name!r} ({self.dataset_id}, "
                f"{plural(self.dataset_rows, 'row')}, ~{self.dataset_tokens} tokens)",
                f"Hyperparameters: {hyper}",
                f"Steps: {self.total_steps}; memory ~{self.memory_estimate_mib} MiB "
                f"of {self.memory_limit_mib} MiB allowed",
                f"Compute: {self.compute.availability}",
                f"Estimated duration: {durations.duration_words(self.estimated_seconds)}",
                f"Estimated cost: {plural(self.estimated_credits, 'credit')} "
                f"({self.price_per_step} a step; balance {self.balance})",
            ]
        )


@dataclass(frozen=True)
class Planned:
    """A checked plan with the rows it was made from (for the service that launches it)."""

    plan: TrainingPlan
    spec: TrainingIn
    base: Base
    dataset: Dataset
    pool: str


def plan_training(ctx: Context, data: TrainingIn | dict[str, Any]) -> TrainingPlan:
    """Check a training request and show its plan; nothing is written.

    Raises:
        PermissionDenied: a token or turn without the train scope.
        NotFound: the model or dataset is not one the user may use.
        InvalidInput: untrainable model, values out of range, a GPU type this deployment does
            not have, a plan too large for the memory a training job may use, one expected
            to run past the deployment's time cap, or a Trained model name a platform model
            has.
    """
    return check_plan(ctx, data).plan


def check_plan(ctx: Context, data: TrainingIn | dict[str, Any]) -> Planned:
    """`plan_training` with the rows behind the plan.

    Raises:
        See `plan_training`.
    """
    access.require(ctx, Action.TRAINING_LAUNCH)
    spec = parse(TrainingIn, data)
    base = bases.trainable_base(ctx, spec.base_model_id)
    dataset = datasets.dataset_for_training(ctx, spec.dataset_id)
    pool = compute.pool_for(ctx.settings, spec.compute.gpu_type)
    count = 1 if pool == compute.CPU else spec.compute.gpus
    hyper = spec.hyperparameters.frozen()
    if spec.job_type == "lora":
        _require_targets(base, hyper)
    _require_positions(base, hyper)
    memory = _memory_mib(base, spec.job_type, hyper, dataset)
    limit = ctx.settings.training_memory_mib
    if memory > limit:
        raise invalid(
            ["hyperparameters"],
            f"this plan needs about {memory} MiB but a training job may use {limit} MiB: "
            "lower batch_size or max_seq_length, or use lora",
        )
    steps = total_steps(dataset.row_count, hyper.batch_size, hyper.epochs)
    seconds = durations.estimate_seconds(ctx, base, dataset, hyper, pool, steps)
    durations.require_within_cap(ctx, seconds)
    price = _price(ctx, pool, count)
    balance = _ledger.balance_of(ctx, _ledger.acting_user_id(ctx))
    name = spec.name or _default_name(base.model.name, dataset.name)
    _require_own_name(ctx, name)
    plan = TrainingPlan(
        name=name,
        job_type=spec.job_type,
        base_model_id=base.model.id,
        base_model_name=base.model.name,
        base_param_count=base.info.param_count,
        dataset_id=dataset.id,
        dataset_name=dataset.name,
        dataset_rows=dataset.row_count,
        dataset_tokens=dataset.token_estimate,
        hyperparameters=_shown_hyper(spec),
        total_steps=steps,
        compute=_compute_plan(ctx, pool, count),
        memory_estimate_mib=memory,
        memory_limit_mib=limit,
        estimated_seconds=seconds,
        price_per_step=price,
        estimated_credits=steps * price,
        balance=balance,
        affordable=steps * price <= balance,
    )
    return Planned(plan, spec, base, dataset, pool)


def _default_name(base: str, dataset: str) -> str:
    """The name a job gets when none is given, cut to a title's length (its Trained model
    keeps it)."""
    name = f"{base} on {dataset}"
    return name if len(name) <= MAX_TITLE else name[: MAX_TITLE - 1].rstrip() + "…"


def _require_own_name(ctx: Context, name: str) -> None:
    """Refuse a job whose Trained model would take a platform model's name, as adding or
    renaming a model of one's own does (`models.is_platform_name`).

    Raises:
        InvalidInput: the name is a platform model's, whatever its case (loc `["name"]`).
    """
    if models.is_platform_name(ctx, name):
        raise invalid(
            ["name"],
            f"the Trained model would be named {name!r}, a platform model's name; choose another",
        )


def _require_targets(base: Base, hyper: Hyperparameters) -> None:
    """Refuse LoRA target_modules that name no module of the base, which peft would only find
    once the job has started."""
    modules = base.info.modules
    if not modules:  # the base's module names could not be read: peft has the last word
        return
    for position, target in enumerate(hyper.target_modules):
        if not matches_module(target, modules):
            known = sorted({name.rsplit(".", 1)[-1] for name in modules})
            raise invalid(
                ["hyperparameters", "target_modules", position],
                f"{target!r} names no module of {base.model.name}; its modules include "
                f"{', '.join(known)}",
            )


def _require_positions(base: Base, hyper: Hyperparameters) -> None:
    """Refuse a max_seq_length past a base's learned positions, which the first row that long
    would fail the job on once queued ("index out of range")."""
    context = base.info.context_length
    if base.info.model_type in LEARNED_POSITIONS and 0 < context < hyper.max_seq_length:
        raise invalid(
            ["hyperparameters", "max_seq_length"],
            f"{base.model.name} reads at most {context} tokens (its positions are learned): "
            f"set max_seq_length to {context} or less",
        )


def _memory_mib(base: Base, job_type: str, hyper: Hyperparameters, dataset: Dataset) -> int:
    """The engine's estimate for the longest row this dataset has: batches are padded to their
    longest row, never to max_seq_length. A row's token estimate is characters / 4, so it is
    doubled to stay on the safe side of the real tokenizer."""
    longest = 2 * dataset.longest_row_tokens or hyper.max_seq_length
    sized = replace(hyper, max_seq_length=max(min(hyper.max_seq_length, longest), 16))
    kind: JobType = "sft" if job_type == "sft" else "lora"
    return math.ceil(estimate_peak_bytes(base.info, kind, sized) / 2**20)


def _shown_hyper(spec: TrainingIn) -> dict[str, Any]:
    shown = spec.hyperparameters.model_dump()
    if spec.job_type != "lora":
        lora_only = {"lora_rank", "lora_alpha", "lora_dropout", "target_modules"}
        shown = {k: v for k, v in shown.items() if k not in lora_only}
    return shown


def _compute_plan(ctx: Context, pool: str, count: int) -> ComputePlan:
    state = next(p for p in compute.pools_now(ctx) if p.pool == pool)
    if count > state.total:
        raise invalid(["compute", "gpus"], f"{pool} has {state.total}, not {count}")
    now = state.free >= count and state.queued == 0
    if now:
        availability = f"{_pool_words(pool, count)}: free now ({state.free} of {state.total})"
    else:
        availability = (
            f"{_pool_words(pool, count)}: busy ({state.in_use} of {state.total} in use, "
            f"{state.queued} job(s) waiting): this job waits in the queue"
        )
    gpu = None if pool == compute.CPU else pool.removeprefix("gpu:")
    return ComputePlan(pool, gpu, count, state.total, state.free, state.queued, now, availability)


def _pool_words(pool: str, count: int) -> str:
    return "CPU" if pool == compute.CPU else f"{count} × {pool.removeprefix('gpu:')} GPU"


def _price(ctx: Context, pool: str, count: int) -> int:
    if pool == compute.CPU:
        return ctx.settings.training_cpu_price_per_step
    return ctx.settings.training_gpu_price_per_step * count


def _shown(value: Any) -> str:
    return ",".join(value) if isinstance(value, list) else str(value)
