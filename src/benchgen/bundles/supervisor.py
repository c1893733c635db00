"""Start a program under rlimits, capture its capped output, and stop it past its limits."""

from __future__ import annotations

import errno
import os
import resource
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from benchgen.bundles.trees import MAX_DEPTH

_POLL_SECONDS = 0.2
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
        stopped = _watch(proc, limits, watched, out, err, started)
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
    if stopped is None:
        stopped = _exit_reason(code, stderr, limits)
    exit_code = None if stopped is not None and code < 0 else _exit_status(code)
    seconds = time.monotonic() - started
    return Outcome(exit_code, out.text(), stderr, stopped, seconds)


def _watch(
    proc: subprocess.Popen[bytes],
    limits: Limits,
    watched: list[Path],
    out: _Capture,
    err: _Capture,
    started: float,
) -> str | None:
    # The parent enforces what rlimits cannot: wall time, output volume, bytes written to disk.
    while True:
        try:
            proc.wait(timeout=_POLL_SECONDS)
            return None
        except subprocess.TimeoutExpired:
            pass
        reason = _passed_limit(limits, watched, out, err, started)
        if reason is not None:
            _kill_group(proc)
            return reason


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    # bwrap leads the group; with it dies the namespace's init, and with that every process
    # inside, even those that made their own session.
    with suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)


def _passed_limit(
    limits: Limits, watched: list[Path], out: _Capture, err: _Capture, started: float
) -> str | None:
    if time.monotonic() - started > limits.wall_seconds:
        return f"stopped at the wall-time limit of {limits.wall_seconds:g} s"
    for name, capture in (("output", out), ("error output", err)):
        if capture.overflow:
            return f"stopped: output limit ({name} past {limits.output_chars} characters)"
    return _tree_limit(limits, watched)


def _tree_limit(limits: Limits, watched: list[Path]) -> str | None:
    """Why the folders a program may write to are past their limits, if they are."""
    written, too_deep = _tree(watched)
    if too_deep:
        return _TOO_DEEP
    if written > limits.written_bytes:
        return f"stopped: wrote more than {_size(limits.written_bytes)}"
    return None


def _exit_reason(code: int, stderr: str, limits: Limits) -> str | None:
    # Best effort: rlimits surface as signals (CPU, file size) or as allocation errors.
    if code == 0:
        return None
    signum = -code if code < 0 else code - 128
    if signum in (signal.SIGXCPU, signal.SIGKILL):
        return f"stopped: CPU time limit of {limits.cpu_seconds} s"
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
                # Sparse files count at their size: copying them later would write it all.
                total += max(info.st_size, info.st_blocks * 512, _ENTRY_BYTES)
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
