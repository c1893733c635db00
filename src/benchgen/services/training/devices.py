"""This worker's GPUs and which of them its training attempts hold: a GPU job gets free GPUs of
its pool's type on the machine that runs it, never merely the first GPU there."""

from __future__ import annotations

import fcntl
import logging
import os
import re
import tempfile
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from benchgen.services.training import compute

log = logging.getLogger(__name__)

# Shared by every worker process on the machine, whatever its data folder: GPUs are the machine's.
MACHINE_LOCKS = Path(tempfile.gettempdir()) / "benchgen-gpus"


@dataclass(frozen=True)
class Gpu:
    """One GPU this process sees."""

    index: int  # torch's index for it in this process
    name: str  # torch's name for it, e.g. "NVIDIA H200"
    visible_as: str  # what a child's CUDA_VISIBLE_DEVICES names it by


def serves(gpu_type: str, name: str) -> bool:
    """Whether a GPU named `name` by torch belongs to the pool of `gpu_type`: the whole name
    (a detected pool's), or the type as a word of it (`H200` in "NVIDIA H200 NVL"; `A10` is not
    in "NVIDIA A100"), whatever the case."""
    word = rf"(?<![a-z0-9]){re.escape(gpu_type.strip().lower())}(?![a-z0-9])"
    return re.search(word, name.lower()) is not None


class MachineLocks:
    """Which GPUs another worker process on this machine trains on: an attempt holds a lock
    file per GPU (flock), which the kernel drops when the process ends however it ends.

    GPUs are named as the workers' children see them (`Gpu.visible_as`), so workers started with
    different CUDA_VISIBLE_DEVICES lists still agree on which physical GPU is which, as long as
    they name GPUs the same way (indices or UUIDs) under the same CUDA_DEVICE_ORDER.
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._held: dict[str, int] = {}  # GPU → the open lock file holding it

    def take(self, gpu: Gpu) -> bool:
        """Hold `gpu` for this process; False when another process holds it."""
        fd = self._open(gpu)
        if fd is None:
            return True  # no lock folder: this process's own bookkeeping still holds
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        self._held[gpu.visible_as] = fd
        return True

    def give_back(self, gpu: Gpu) -> None:
        fd = self._held.pop(gpu.visible_as, None)
        if fd is not None:
            os.close(fd)  # closing the last descriptor releases the lock

    def busy(self, gpu: Gpu) -> bool:
        """Whether another process holds `gpu` now (taking nothing)."""
        if not self.take(gpu):
            return True
        self.give_back(gpu)
        return False

    def _open(self, gpu: Gpu) -> int | None:
        name = re.sub(r"[^A-Za-z0-9_.-]", "_", gpu.visible_as)
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            return os.open(self.folder / f"gpu-{name}.lock", os.O_RDWR | os.O_CREAT, 0o666)
        except OSError as exc:
            # Placing by this process's own bookkeeping beats refusing every GPU job.
            log.warning(
                "GPU lock folder %s unusable (%s): other workers are not seen", self.folder, exc
            )
            return None


class LocalGpus:
    """The GPUs this process sees, found on the first GPU job, and those its attempts hold.
    Thread-safe: the embedded workers run jobs side by side.

    Devices are numbered as this process sees them; a child names them as this process's
    CUDA_VISIBLE_DEVICES does (its n-th entry is torch's index n here), so a worker started
    with CUDA_VISIBLE_DEVICES=2,3 gives its jobs only GPUs 2 and 3. Children inherit
    CUDA_DEVICE_ORDER, which decides what an index means, from the worker. A GPU another worker
    process on the machine trains on is not free here either (`MachineLocks`).
    """

    def __init__(
        self,
        detect: Callable[[], list[str]] = compute.gpu_names,
        visible: Callable[[], str | None] = lambda: os.environ.get("CUDA_VISIBLE_DEVICES"),
        machine: Path | None = None,
    ) -> None:
        self._detect, self._visible = detect, visible
        self._machine = MachineLocks(machine or MACHINE_LOCKS)
        self._gpus: list[Gpu] | None = None
        self._held: set[int] = set()
        self._lock = threading.Lock()

    def gpus(self) -> list[Gpu]:
        """Every GPU this process sees, by index."""
        with self._lock:
            return list(self._found())

    def held(self) -> set[int]:
        """The indices attempts in this process hold now."""
        with self._lock:
            return set(self._held)

    def take(self, gpu_type: str, count: int) -> tuple[Gpu, ...] | None:
        """`count` free GPUs of `gpu_type`, lowest indices first, now held; None (holding
        nothing) when fewer are free."""
        with self._lock:
            picked: list[Gpu] = []
            for gpu in self._unheld(gpu_type):
                if len(picked) < count and self._machine.take(gpu):
                    picked.append(gpu)
            if len(picked) < count:
                self._release(picked)
                return None
            self._held.update(g.index for g in picked)
            return tuple(picked)

    def give_back(self, gpus: tuple[Gpu, ...]) -> None:
        with self._lock:
            self._release(gpus)

    def free_of(self, gpu_type: str) -> int:
        """How many GPUs of `gpu_type` no attempt here, nor another worker here, holds."""
        with self._lock:
            return sum(not self._machine.busy(g) for g in self._unheld(gpu_type))

    def described(self) -> str:
        """This process's GPUs in words, e.g. "2 × NVIDIA H200, 1 × NVIDIA A100", or "none"."""
        names = Counter(g.name for g in self.gpus())
        return ", ".join(f"{n} × {name}" for name, n in names.items()) or "none"

    @contextmanager
    def attempt(self) -> Iterator[Hold]:
        """What one training attempt takes within it, given back when it ends, however it
        ends (completed, failed, cancelled, timed out, or an exception)."""
        hold = Hold(self)
        try:
            yield hold
        finally:
            hold.release()

    def _unheld(self, gpu_type: str) -> list[Gpu]:
        """Called with the lock held: GPUs of the type no attempt in this process holds."""
        return [g for g in self._found() if g.index not in self._held and serves(gpu_type, g.name)]

    def _release(self, gpus: Iterable[Gpu]) -> None:
        """Called with the lock held."""
        for gpu in gpus:
            self._held.discard(gpu.index)
            self._machine.give_back(gpu)

    def _found(self) -> list[Gpu]:
        """Called with the lock held; detects once."""
        if self._gpus is None:
            names = self._detect()
            entries = [e.strip() for e in (self._visible() or "").split(",") if e.strip()]
            ids = entries if len(entries) >= len(names) else [str(i) for i in range(len(names))]
            self._gpus = [Gpu(i, name, ids[i]) for i, name in enumerate(names)]
        return self._gpus


class Hold:
    """The GPUs one attempt holds (see `LocalGpus.attempt`)."""

    def __init__(self, gpus: LocalGpus) -> None:
        self.local = gpus
        self.taken: tuple[Gpu, ...] = ()

    def take(self, gpu_type: str, count: int) -> tuple[str, ...] | None:
        """Hold `count` GPUs of `gpu_type` for this attempt: how a child's CUDA_VISIBLE_DEVICES
        names them, or None when this worker has too few free."""
        picked = self.local.take(gpu_type, count)
        if picked is None:
            return None
        self.taken += picked
        return tuple(g.visible_as for g in picked)

    def release(self) -> None:
        self.local.give_back(self.taken)
        self.taken = ()


# This process's GPUs: a worker process and its embedded threads share them.
LOCAL = LocalGpus()
