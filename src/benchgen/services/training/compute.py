"""The compute a deployment offers for training (CPU slots, GPU pools) and what is free right now:
running training jobs hold what they use."""

from __future__ import annotations

import functools
import importlib
import importlib.util
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import func, select

from benchgen.core.config import Settings, parse_gpu_pools
from benchgen.core.context import Context
from benchgen.core.errors import invalid
from benchgen.core.permissions import Action
from benchgen.core.statuses import TrainingStatus
from benchgen.db.tables import TrainingJob
from benchgen.services import access
from benchgen.services.specs import MAX_LIST, check_window

CPU = "cpu"
# What a GPU's kernel driver puts on a Linux machine (a container that was given one sees them
# too): NVIDIA's, and AMD's for ROCm builds of torch, which show their GPUs as CUDA devices.
GPU_DRIVER_FILES = ("/proc/driver/nvidia/version", "/dev/nvidiactl", "/dev/kfd")


@dataclass(frozen=True)
class PoolView:
    """One pool: `cpu`, or `gpu:<type>`; `total` slots or GPUs, `in_use` by running jobs,
    `queued` jobs waiting for it."""

    pool: str
    kind: str  # cpu | gpu
    gpu_type: str | None
    total: int
    in_use: int
    free: int
    queued: int


def compute_inventory(
    ctx: Context, limit: int | None = None, after: str | None = None
) -> list[PoolView]:
    """The pools this deployment offers for training, the CPU first and then the GPU types
    by name, with what is free right now; `limit` of them (all when None) after the pool
    named `after` when given.

    Raises:
        PermissionDenied: the principal may not read training (a token without read).
        InvalidInput: limit outside 1..MAX_LIST.
    """
    access.require(ctx, Action.TRAINING_READ)
    if limit is not None:
        check_window(limit, 0, MAX_LIST)
    names = sorted(offered(ctx.settings), key=pool_order)
    if after is not None:
        names = [name for name in names if pool_order(name) > pool_order(after)]
    return pools_now(ctx, names[:limit])


def pool_order(name: str) -> tuple[bool, str]:
    """A pool's place in the inventory: the CPU pool first, then GPU pools by name (a name,
    not a place in the settings, so a pool added or removed between pages shifts no other)."""
    return name != CPU, name


def pools_now(ctx: Context, names: list[str] | None = None) -> list[PoolView]:
    """The pools named (all, in the settings' order, when None) and their use, for services
    that have checked access; one query whatever their number."""
    sizes = offered(ctx.settings)
    shown = list(sizes) if names is None else names
    held, waiting = _use(ctx, shown)
    return [
        PoolView(
            name,
            CPU if name == CPU else "gpu",
            None if name == CPU else name.removeprefix("gpu:"),
            sizes[name],
            min(held[name], sizes[name]),
            max(sizes[name] - held[name], 0),
            waiting[name],
        )
        for name in shown
    ]


def offered(settings: Settings) -> dict[str, int]:
    """Pool name → size: the CPU slots, then each GPU type (configured, else detected)."""
    pools = {CPU: settings.training_cpu_slots}
    gpus = settings.training_gpus
    found = _detected_gpus() if gpus is None else parse_gpu_pools(gpus)
    pools.update({f"gpu:{name}": count for name, count in found.items()})
    return pools


def pool_for(settings: Settings, gpu_type: str | None) -> str:
    """The pool a plan asks for: the CPU pool, or the named GPU type's.

    Raises:
        InvalidInput: no GPU of that type here (the message lists those there are).
    """
    if gpu_type is None:
        return CPU
    pools = offered(settings)
    name = f"gpu:{gpu_type}"
    if name not in pools or pools[name] == 0:
        there = ", ".join(p.removeprefix("gpu:") for p in pools if p != CPU) or "none"
        raise invalid(["compute", "gpu_type"], f"no {gpu_type!r} GPU here (GPUs: {there})")
    return name


def _use(ctx: Context, pools: list[str]) -> tuple[Counter[str], Counter[str]]:
    """Per pool: the slots or GPUs running jobs hold, and how many jobs wait (a job waiting
    for two GPUs is one job in the queue)."""
    rows = ctx.session.execute(
        select(
            TrainingJob.compute_pool,
            TrainingJob.status,
            func.sum(TrainingJob.compute_count),
            func.count(),
        )
        .where(
            TrainingJob.status.in_([TrainingStatus.RUNNING, TrainingStatus.QUEUED]),
            TrainingJob.compute_pool.in_(pools),
        )
        .group_by(TrainingJob.compute_pool, TrainingJob.status)
    )
    held: Counter[str] = Counter()
    waiting: Counter[str] = Counter()
    for pool, status, units, jobs in rows:
        if status == TrainingStatus.RUNNING:
            held[pool] += int(units or 0)
        else:
            waiting[pool] += int(jobs)
    return held, waiting


@functools.cache
def _detected_gpus() -> dict[str, int]:
    """GPUs torch sees, by name (e.g. {"NVIDIA H200": 1})."""
    return dict(Counter(gpu_names()))


def gpu_names() -> list[str]:
    """The name of each GPU torch sees in this process, by its index (renumbered by this
    process's CUDA_VISIBLE_DEVICES); none without torch, without a GPU driver or without CUDA."""
    if importlib.util.find_spec("torch") is None or not _gpu_driver():
        return []
    torch = importlib.import_module("torch")
    if not torch.cuda.is_available():
        return []
    return [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]


def _gpu_driver() -> bool:
    """Whether this machine may have a GPU for torch to find. Importing torch to ask takes
    ~1.5 s, which the first look at the compute (a page, an estimate) would wait for on a
    machine with no GPU driver at all."""
    if sys.platform != "linux":
        return True  # no cheap sign elsewhere: torch is asked
    return any(Path(name).exists() for name in GPU_DRIVER_FILES)
