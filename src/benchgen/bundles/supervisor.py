"""Start a program under rlimits, capture its capped output, and stop it past its limits."""

from __future__ import annotations

import ctypes
import errno
import os
import resource
import signal
import stat
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import IO

from benchgen.bundles.trees import MAX_DEPTH

_POLL_SECONDS = 0.2
_CLONE_NEWIPC = 0x08000000
_OPEN_FILES = 4096
_MAX_USAGE_SPACING = 5.0
_READ_CHUNK = 1 << 16
# A program that makes millions of empty files fills inodes, not bytes: charge each entry a block.
_ENTRY_BYTES = 4096
# Every later walk of what it wrote (handing it back, keeping predictions) must stay bounded.
_TOO_DEEP = f"stopped: it wrote folders nested more than {MAX_DEPTH} deep"


@dataclass(frozen=True)
class Limits:
    """What one program run may use; past any of them it is stopped."""

    wall_seconds: float = 600.0
    cpu_seconds: int = 600
    memory_bytes: int = 4 << 30
    processes: int = 128
    file_bytes: int = 1 << 30
    written_bytes: int = 2 << 30
    tmp_bytes: int = 256 << 20
    output_chars: int = 200_000


@dataclass(frozen=True)
class Outcome:
    """How a run ended: exit code (None when we stopped it), captured output, why it was stopped."""

    exit_code: int | None
    stdout: str
    stderr: str
    stopped: str | None
    seconds: float

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and self.stopped is None


def supervise(
    cmd: list[str],
    limits: Limits,
    env: Mapping[str, str],
    cwd: str | None,
    fds: list[int],
    watched: list[Path],
) -> Outcome:
    """Run `cmd` to its end or to the first limit passed (`watched`: where it may write)."""
    started = time.monotonic()
    proc = subprocess.Popen(  # noqa: S603 - argv list, no shell
        cmd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(env),
        cwd=cwd,
        start_new_session=True,  # one process group to kill, apart from ours
        pass_fds=fds,
        preexec_fn=_rlimits(limits),  # only setrlimit calls: no locks taken
    )
    assert proc.stdout is not None and proc.stderr is not None
    out, err = (
        _Capture(proc.stdout, limits.output_chars),
        _Capture(proc.stderr, limits.output_chars),
    )
    try:
        stopped = _watch(proc, limits, _Watched(proc.pid, watched), out, err, started)
    except BaseException:
        _kill_group(proc)  # interrupted while it runs: never leave it behind
        raise
    code = proc.wait()
    for capture in (out, err):
        # Inside the sandbox every writer is gone with its namespace; unsandboxed, a detached
        # child could hold the pipe, so waiting is bounded.
        capture.join(timeout=2)
    stderr = err.text()
    if stopped is None:
        # Checked once more at the end: between two polls a program can nest thousands of
        # folders, or write a gigabyte (and then meet the file size limit instead).
        stopped = _tree_limit(limits, watched)
    seconds = time.monotonic() - started
    if stopped is None:
        stopped = _exit_reason(code, stderr, limits, seconds)
    exit_code = None if stopped is not None and code < 0 else _exit_status(code)
    return Outcome(exit_code, out.text(), stderr, stopped, seconds)


@dataclass(frozen=True)
class _Watched:
    """Where a run may leave data: the folders it may write, and the files its processes (all
    descendants of `root`) hold open or mapped after deleting them."""

    root: int
    folders: list[Path]

    def devices(self) -> set[int]:
        devices = set()
        for folder in self.folders:
            with suppress(OSError):
                devices.add(folder.stat().st_dev)
        return devices


def _watch(
    proc: subprocess.Popen[bytes],
    limits: Limits,
    watched: _Watched,
    out: _Capture,
    err: _Capture,
    started: float,
) -> str | None:
    # The parent enforces what rlimits cannot: wall time, output volume, bytes written to disk,
    # memory of all processes together.
    usage_due = started
    while True:
        try:
            proc.wait(timeout=_POLL_SECONDS)
            return None
        except subprocess.TimeoutExpired:
            pass
        reason = _passed_limit(limits, out, err, started)
        if reason is None and time.monotonic() >= usage_due:
            began = time.monotonic()
            reason = _usage_limit(limits, watched)
            # Measuring costs time in proportion to what the program made (files, processes,
            # mappings): it is spaced out to take about a tenth of ours, but never for long.
            spacing = min(9 * (time.monotonic() - began), _MAX_USAGE_SPACING)
            usage_due = time.monotonic() + spacing
        if reason is not None:
            _kill_group(proc)
            return reason


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    # bwrap leads the group; with it dies the namespace's init, and with that every process
    # inside, even those that made their own session.
    with suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)


def _passed_limit(limits: Limits, out: _Capture, err: _Capture, started: float) -> str | None:
    if time.monotonic() - started > limits.wall_seconds:
        return f"stopped at the wall-time limit of {limits.wall_seconds:g} s"
    for name, capture in (("output", out), ("error output", err)):
        if capture.overflow:
            return f"stopped: output limit ({name} past {limits.output_chars} characters)"
    return None


def _usage_limit(limits: Limits, watched: _Watched) -> str | None:
    pids = _descendants(watched.root)
    on_disk, in_memory = _held_files(pids, watched.devices())
    if in_memory + _memory(pids, limits.memory_bytes - in_memory) > limits.memory_bytes:
        return f"stopped: memory limit of {_size(limits.memory_bytes)}"
    return _tree_limit(limits, watched.folders, on_disk)


def _tree_limit(limits: Limits, watched: list[Path], held: int = 0) -> str | None:
    """Why the folders a program may write to (plus `held` bytes it deleted there but keeps
    open) are past their limits, if they are."""
    written, too_deep = _tree(watched)
    if too_deep:
        return _TOO_DEEP
    if written + held > limits.written_bytes:
        return f"stopped: wrote more than {_size(limits.written_bytes)}"
    return None


def _held_files(pids: list[int], disks: set[int]) -> tuple[int, int]:
    """Bytes of deleted files that `pids` keep open or mapped: on the `disks` of the folders the
    run may write, and in memory (memfds, shared memory)."""
    # Unchecked, a program could fill the disk with files it had already deleted, which no walk
    # of its folders sees, and the memory with memfds, which no address-space limit counts.
    memory = _shared_memory_device()
    found: dict[tuple[int, int], tuple[int, int]] = {}
    for pid in pids:
        for handle in _handles(pid):
            with suppress(OSError):
                info = os.stat(handle)
                if info.st_nlink == 0 and stat.S_ISREG(info.st_mode):
                    found[info.st_dev, info.st_ino] = (info.st_dev, _bytes(info))
    # The sandbox's own /tmp and /dev/shm are neither: their size caps already bound them.
    on_disk = sum(size for device, size in found.values() if device in disks)
    in_memory = sum(size for device, size in found.values() if device == memory)
    return on_disk, in_memory


def _memory(pids: list[int], allowed: int) -> int:
    """The memory `pids` use together (precisely only when a quick upper bound passes
    `allowed`), plus what the run holds in System V IPC."""
    # Each process keeps within the address-space limit, but together they could use it as
    # many times over as they may run processes. Their anonymous and shared resident pages are
    # an upper bound; PSS, dearer to read, shares pages among the processes mapping them
    # (copy-on-write after fork), so forked workers are charged once for what they share.
    held = _ipc_memory(pids)
    quick = held + sum(_status_bytes(pid, (b"RssAnon:", b"RssShmem:", b"VmSwap:")) for pid in pids)
    if quick <= allowed:
        return quick
    fields = (b"Pss_Anon:", b"Pss_Shmem:", b"SwapPss:")
    return held + sum(_status_bytes(pid, fields, "smaps_rollup") for pid in pids)


def _status_bytes(pid: int, fields: tuple[bytes, ...], name: str = "status") -> int:
    total = 0
    with suppress(OSError, ValueError), open(f"/proc/{pid}/{name}", "rb") as handle:
        for line in handle:
            if line.startswith(fields):
                total += int(line.split()[1]) * 1024  # in kB
    return total


def _ipc_memory(pids: list[int]) -> int:
    """Bytes in the System V message queues and detached shared-memory segments of the run's
    IPC namespace: they outlive every process that filled them, until the namespace goes."""
    own = os.readlink("/proc/self/ns/ipc")
    for pid in pids:
        with suppress(OSError):
            if os.readlink(f"/proc/{pid}/ns/ipc") != own:
                return _in_namespace(f"/proc/{pid}/ns/ipc", _sysv_bytes)
    return 0


def _in_namespace(path: str, read: Callable[[], int]) -> int:
    # setns moves only the calling thread into the IPC namespace (and needs root), so a
    # throw-away thread reads there while the server's threads stay where they are.
    found = [0]

    def enter_and_read() -> None:
        with suppress(OSError):  # the run may end meanwhile: nothing left to count
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            try:
                entered = ctypes.CDLL(None).setns(fd, _CLONE_NEWIPC) == 0
            finally:
                os.close(fd)
            if entered:
                found[0] = read()

    reader = threading.Thread(target=enter_and_read)
    reader.start()
    reader.join()
    return found[0]


def _sysv_bytes() -> int:
    # An attached segment's pages are already in its processes' PSS.
    detached = _sysv_table("shm", lambda row: row["nattch"] == "0", ("rss", "swap"))
    return detached + _sysv_table("msg", lambda _row: True, ("cbytes",))


def _sysv_table(kind: str, wanted: Callable[[dict[str, str]], bool], sizes: Sequence[str]) -> int:
    with suppress(OSError), open(f"/proc/sysvipc/{kind}") as handle:
        header, *lines = handle.read().splitlines()
        rows = [dict(zip(header.split(), line.split(), strict=False)) for line in lines]
        return sum(int(row.get(size, "0")) for row in rows if wanted(row) for size in sizes)
    return 0


@lru_cache(maxsize=1)
def _shared_memory_device() -> int:
    # memfd files and System V segments live on the kernel's one internal shared-memory mount.
    fd = os.memfd_create("benchgen-probe", os.MFD_CLOEXEC)
    try:
        return os.fstat(fd).st_dev
    finally:
        os.close(fd)


def _descendants(root: int) -> list[int]:
    # Inside the sandbox every orphan is adopted by the namespace's init, bwrap's own child,
    # so the run's processes are exactly `root`'s descendants.
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            with suppress(OSError, ValueError):
                with open(f"/proc/{entry.name}/stat", "rb") as handle:
                    # "pid (command) state ppid ...": the command may hold spaces and ')'.
                    ppid = int(handle.read().rpartition(b")")[2].split()[1])
                children.setdefault(ppid, []).append(int(entry.name))
    found, pending = [], [root]
    while pending:
        pid = pending.pop()
        found.append(pid)
        pending += children.get(pid, [])
    return found


def _handles(pid: int) -> list[str]:
    """The /proc links to every file `pid` has open, and to the deleted files it maps."""
    handles = []
    with suppress(OSError):
        handles += [f"/proc/{pid}/fd/{fd}" for fd in os.listdir(f"/proc/{pid}/fd")]
    with suppress(OSError, ValueError), open(f"/proc/{pid}/maps", "rb") as maps:
        for line in maps:
            if line.rstrip().endswith(b" (deleted)"):
                # maps pads the addresses with zeros; map_files names them without.
                start, end = (int(part, 16) for part in line.split(maxsplit=1)[0].split(b"-"))
                handles.append(f"/proc/{pid}/map_files/{start:x}-{end:x}")
    return handles


def _bytes(info: os.stat_result) -> int:
    # Sparse files count at their size: copying them later would write it all.
    return max(info.st_size, info.st_blocks * 512)


def _exit_reason(code: int, stderr: str, limits: Limits, seconds: float) -> str | None:
    # Best effort: rlimits surface as signals (CPU, file size) or as allocation errors.
    if code == 0:
        return None
    signum = -code if code < 0 else code - 128
    # The CPU limit's last word is SIGKILL, but so is the kernel's out-of-memory killer's and a
    # program's own `kill -9`: it is the CPU limit only if that much CPU time could have passed.
    could_use = seconds * (os.cpu_count() or 1)
    if signum == signal.SIGXCPU or (signum == signal.SIGKILL and could_use >= limits.cpu_seconds):
        return f"stopped: CPU time limit of {limits.cpu_seconds} s"
    if signum == signal.SIGKILL:
        return "stopped: killed by SIGKILL (by itself or the system, not at a limit)"
    if signum == signal.SIGXFSZ or "File too large" in stderr:
        return f"stopped: file size limit of {_size(limits.file_bytes)}"
    if any(mark in stderr for mark in _MEMORY_MARKS):
        return f"stopped: memory limit of {_size(limits.memory_bytes)}"
    return None


_MEMORY_MARKS = ("MemoryError", "Cannot allocate memory", "bad_alloc", "Unable to allocate")


def _exit_status(code: int) -> int:
    return 128 - code if code < 0 else code


def _rlimits(limits: Limits) -> Callable[[], None]:
    nproc = limits.processes
    if os.geteuid() != 0:
        # Weakness: unprivileged, the program shares our uid, so the limit counts our own tasks
        # too; it is set to what we run now plus the allowance, which bounds a fork bomb but not
        # exactly. Running the server as root (dropping each program to its own uid) is exact.
        nproc += _tasks_of(os.getuid())
    wanted = {
        resource.RLIMIT_CPU: (limits.cpu_seconds, limits.cpu_seconds + 1),
        resource.RLIMIT_AS: (limits.memory_bytes, limits.memory_bytes),
        resource.RLIMIT_NPROC: (nproc, nproc),
        resource.RLIMIT_FSIZE: (limits.file_bytes, limits.file_bytes),
        resource.RLIMIT_CORE: (0, 0),
        # Each open file is looked at while the program runs (deleted ones still fill the disk).
        resource.RLIMIT_NOFILE: (_OPEN_FILES, _OPEN_FILES),
    }
    pairs = [(kind, _within_hard(kind, soft, hard)) for kind, (soft, hard) in wanted.items()]

    def apply() -> None:  # runs in the forked child, before exec: nothing but syscalls
        for kind, pair in pairs:
            resource.setrlimit(kind, pair)

    return apply


def _within_hard(kind: int, soft: int, hard: int) -> tuple[int, int]:
    # Without privileges a hard limit can only be lowered.
    current = resource.getrlimit(kind)[1]
    if current != resource.RLIM_INFINITY:
        hard = min(hard, current)
    return min(soft, hard), hard


def _tasks_of(uid: int) -> int:
    count = 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            with suppress(OSError):
                if entry.stat().st_uid == uid:
                    count += len(os.listdir(f"/proc/{entry.name}/task"))
    return count


def kill_uid(uid: int) -> None:
    """Kill every process left running as `uid`, a uid lent to a program."""
    if os.geteuid() != 0 or uid == os.getuid():
        return  # only a uid lent to a program is swept, never our own
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            with suppress(OSError):
                if entry.stat().st_uid == uid:
                    os.kill(int(entry.name), signal.SIGKILL)


def _tree(paths: list[Path]) -> tuple[int, bool]:
    """Bytes written under `paths`, and whether a path there is nested past MAX_DEPTH."""
    total = 0
    pending = [(str(p), 0) for p in paths]
    while pending:
        path, depth = pending.pop()
        try:
            with os.scandir(path) as scan:
                entries = list(scan)
        except OSError as exc:
            # A path past the kernel's longest hides what lies below it from this count.
            if exc.errno == errno.ENAMETOOLONG:
                return total, True
            continue
        if entries and depth >= MAX_DEPTH:
            return total, True
        for entry in entries:
            with suppress(OSError):
                info = entry.stat(follow_symlinks=False)
                total += max(_bytes(info), _ENTRY_BYTES)
                if entry.is_dir(follow_symlinks=False):
                    pending.append((entry.path, depth + 1))
    return total, False


def _size(count: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if count >= 1 << shift:
            return f"{count / (1 << shift):g} {unit}"
    return f"{count} bytes"


class _Capture(threading.Thread):
    """Reads one pipe to its end, keeping the first `cap` bytes and dropping the rest."""

    def __init__(self, stream: IO[bytes], cap: int) -> None:
        super().__init__(daemon=True)
        self.stream, self.cap = stream, cap
        self.kept = bytearray()
        self.overflow = False
        self.start()

    def run(self) -> None:
        # Reading on after the cap keeps the writer from blocking until it is killed.
        with self.stream:
            while chunk := os.read(self.stream.fileno(), _READ_CHUNK):
                room = self.cap - len(self.kept)
                self.overflow = self.overflow or len(chunk) > room
                self.kept += chunk[: max(room, 0)]

    def text(self) -> str:
        text = self.kept.decode(errors="replace")[: self.cap]
        return text + (f"\n[output cut at {self.cap} characters]" if self.overflow else "")
