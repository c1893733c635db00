"""How long a training plan would take, and the deployment's cap on how long a job may run."""

from __future__ import annotations

import math

from benchgen.core.context import Context
from benchgen.core.errors import invalid
from benchgen.db.tables import Dataset
from benchgen.services.training import compute
from benchgen.services.training.bases import Base
from benchgen.training.spec import Hyperparameters

# Rough costs of a 135M-parameter model on one CPU thread (bench/train.py measures them): its
# load, each optimizer step's fixed work, and throughput over the tokens. A model n times
# larger is taken as n times slower, a GPU as 40 times faster once loaded.
LOAD_S_AT_135M = 20.0
STEP_S_AT_135M = 0.4
CPU_TOKENS_PER_S_AT_135M = 300.0
REFERENCE_PARAMS = 135_000_000
GPU_SPEEDUP = 40.0


def estimate_seconds(
    ctx: Context, base: Base, dataset: Dataset, hyper: Hyperparameters, pool: str, steps: int
) -> int:
    """A rough duration: loading, then each step's fixed work and its tokens, scaled by model
    size and threads (or a GPU)."""
    per_row = min(dataset.token_estimate / max(dataset.row_count, 1), hyper.max_seq_length)
    tokens = per_row * dataset.row_count * hyper.epochs
    size = max(base.info.param_count, 1) / REFERENCE_PARAMS
    speed = ctx.settings.training_threads * (GPU_SPEEDUP if pool != compute.CPU else 1.0)
    work = steps * STEP_S_AT_135M + tokens / CPU_TOKENS_PER_S_AT_135M
    return math.ceil(LOAD_S_AT_135M * size + work * size / speed)


def require_within_cap(ctx: Context, seconds: int) -> None:
    """Refuse a plan expected to outlast the deployment's time cap: the job would be stopped
    there, charged for its steps, with no Trained model to show for them.

    Raises:
        InvalidInput: at `hyperparameters`, naming the estimate, the cap and what to change.
    """
    hours = ctx.settings.training_max_hours
    if seconds > hours * 3600:
        raise invalid(
            ["hyperparameters"],
            f"this plan would take {duration_words(seconds)} but a training job may run at "
            f"most {hours:g} h here: lower epochs, use a dataset with fewer rows, or raise "
            "batch_size",
        )


def duration_words(seconds: int) -> str:
    """A rough duration in words (`about 3 min`)."""
    if seconds < 90:
        return f"about {seconds} s"
    if seconds < 5400:
        return f"about {round(seconds / 60)} min"
    return f"about {seconds / 3600:.1f} h"
