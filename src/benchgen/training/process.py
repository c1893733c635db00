"""Running a training job in a child process: limits, events, stop requests and its outcome."""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import queue
import resource
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Literal

from benchgen.training.failures import exit_message, memory_message
from benchgen.training.spec import TrainSpec

STOP_GRACE_S = 30.0  # how long a child may take to stop after SIGUSR1 before it is killed
_POLL_S = 0.2
_EXIT_GRACE_S = 10.0
_STDERR_KEEP = 8192
_PR_SET_PDEATHSIG = 1
# Nothing else crosses into the child: API keys and database URLs in the worker's
# environment stay out of a process that runs third-party model code.
_INHERITED = (
    "PATH",
    "HOME",
    "LANG",
    "LC_ALL",
    "TMPDIR",
    "VIRTUAL_ENV",
    "PYTHONPATH",
    "LD_LIBRARY_PATH",
    "CUDA_DEVICE_ORDER",  # what the indices in CUDA_VISIBLE_DEVICES mean: as for the worker
)
_TERMINAL = ("completed", "cancelled", "error")
Ending = Literal["completed", "cancelled", "timed_out", "failed"]


@dataclass(frozen=True)
class Outcome:
    """How a training attempt ended: `timed_out` when it was stopped at `timeout_s`."""

    status: Ending
    steps_done: int  # the last step reached, counted from the job's start (resumes included)
    final_dir: str | None  # `output_dir/final` when completed
    error: str  # one readable line when failed or timed out, else ""
    peak_rss_bytes: int
    stderr_tail: str = ""  # the child's last 8 KiB of stderr, for the job's log


def run_training(
    spec: TrainSpec,
    on_event: Callable[[dict[str, Any]], None],
    should_stop: Callable[[], bool],
    memory_limit_bytes: int | None,
    timeout_s: float,
) -> Outcome:
    """Run one attempt in a child process and wait for it, passing on each of its events.

    `should_stop` is polled about five times a second; once true, the child stops between
    steps (and is killed if it has not within 30 s). Past `timeout_s` the child is killed
    and the attempt has `timed_out`.
    Call it from a thread that lives until it returns: the child dies with that thread.
    `on_event` runs in the calling thread; if it raises, the child is killed and it propagates.

    Raises:
        OSError: the child process could not be started.
    """
    out = Path(spec.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    spec_path = out / "spec.json"
    spec_path.write_text(spec.to_json(), encoding="utf-8")
    # CUDA drivers reserve vast address space and device memory is not host memory: no limit.
    limit = memory_limit_bytes if spec.device == "cpu" else None
    child = subprocess.Popen(  # noqa: S603 - our own interpreter and module, no shell
        [sys.executable, "-m", "benchgen.training.child", str(spec_path)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=child_env(spec),
        preexec_fn=_preexec(limit, os.getpid()),
        start_new_session=True,  # its own process group, so a kill reaches anything it started
    )
    watch = _Watch(child)
    ended_by = "raised"
    try:
        ended_by = watch.follow(on_event, should_stop, time.monotonic() + timeout_s)
    finally:
        # Its stdout closed: it is exiting. Timed out, ignoring a stop, or on_event raised: kill.
        status, rusage = _reap(child, _EXIT_GRACE_S if ended_by == "exited" else 0.0)
        watch.close()
    return watch.outcome(ended_by, status, rusage.ru_maxrss * 1024, limit, timeout_s)


def child_env(spec: TrainSpec) -> dict[str, str]:
    """The training process's whole environment: a few of the worker's variables, and only the
    GPUs its job was given (none for a CPU job), whatever the worker itself sees."""
    env = {name: os.environ[name] for name in _INHERITED if name in os.environ}
    gpus = spec.gpus if spec.device == "cuda" else ()
    return env | {
        "CUDA_VISIBLE_DEVICES": ",".join(gpus),
        "OMP_NUM_THREADS": str(spec.threads),
        "MKL_NUM_THREADS": str(spec.threads),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "PYTHONUNBUFFERED": "1",
    }


def _preexec(limit: int | None, parent: int) -> Callable[[], None]:
    # Looked up before the fork: the child between fork and exec must not load libraries.
    prctl = ctypes.CDLL(None, use_errno=True).prctl

    def setup() -> None:
        if limit is not None:
            # RLIMIT_DATA, not RLIMIT_AS: both stop torch cleanly ("can't allocate memory"), but
            # the address space also counts what is not memory: libtorch's mapped code, glibc's
            # per-thread arena reservations and mmapped weight files. Measured on SmolLM2 LoRA:
            # peak address space 2.1 GB with 1 thread and 2.8 GB with 8, while resident memory
            # peaked at 1.5-1.6 GB either way; private writable memory (what RLIMIT_DATA
            # counts) tracked resident memory within 10%.
            resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))
        # The kernel kills the child when the thread that started it dies, even by SIGKILL;
        # a parent that died before this line is caught by the check after it.
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:
            os._exit(1)

    return setup


def _reap(child: subprocess.Popen[bytes], grace_s: float) -> tuple[int, Any]:
    """Let the child exit within `grace_s`, kill its process group, and collect its exit."""
    # WNOWAIT leaves a finished child a zombie: its pid, the group's id, stays taken until
    # wait4 below, so killpg cannot reach an unrelated process that reused the number.
    flags = os.WEXITED | os.WNOHANG | os.WNOWAIT
    end = time.monotonic() + grace_s
    while os.waitid(os.P_PID, child.pid, flags) is None and time.monotonic() < end:
        time.sleep(0.05)
    _kill_group(child.pid)  # whatever is still running: the child, or anything it started
    _, status, rusage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    return child.returncode, rusage


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)


class _Watch:
    """Reads a child's stdout events and stderr tail in threads; tracks where the job stands."""

    def __init__(self, child: subprocess.Popen[bytes]) -> None:
        assert child.stdout is not None and child.stderr is not None
        self._child = child
        self._lines: queue.Queue[bytes | None] = queue.Queue()
        self._tail = bytearray()
        self._readers = [
            threading.Thread(target=self._read_lines, args=(child.stdout,), daemon=True),
            threading.Thread(target=self._read_tail, args=(child.stderr,), daemon=True),
        ]
        for reader in self._readers:
            reader.start()
        self.steps = 0
        self.last: dict[str, Any] = {}  # the completed, cancelled or error event
        self.peak_rss = 0
        self.stop_sent = False

    def follow(
        self,
        on_event: Callable[[dict[str, Any]], None],
        should_stop: Callable[[], bool],
        deadline: float,
    ) -> str:
        """Pass events on until stdout closes; returns "exited", "timeout" or "stop_ignored"."""
        stop_sent_at = next_poll = 0.0
        while True:
            try:
                line = self._lines.get(timeout=_POLL_S)
            except queue.Empty:
                line = b""
            if line is None:
                return "exited"
            event = _parse(line)
            if event is not None:
                self._see(event)
                on_event(event)
            now = time.monotonic()
            # At most every _POLL_S however fast events come: should_stop may query a database.
            if not self.stop_sent and now >= next_poll:
                next_poll = now + _POLL_S
                if should_stop():
                    # Not Popen.send_signal: it polls, which could reap the child before wait4.
                    os.kill(self._child.pid, signal.SIGUSR1)
                    self.stop_sent, stop_sent_at = True, now
            if now > deadline:
                return "timeout"
            if self.stop_sent and now - stop_sent_at > STOP_GRACE_S:
                return "stop_ignored"

    def outcome(
        self, ended_by: str, returncode: int, rss: int, limit: int | None, timeout_s: float
    ) -> Outcome:
        """The attempt's outcome from how it ended, its last event and its exit status."""
        kind = self.last.get("event")
        tail = self._tail.decode("utf-8", errors="replace")
        status: Ending = "failed"
        error, final = "", None
        if ended_by == "timeout":
            status, error = "timed_out", _capped(timeout_s, self.steps)
        elif kind == "completed":  # the final folder was whole before the event was sent
            status, final = "completed", str(self.last["dir"])
        elif kind == "cancelled" or (self.stop_sent and kind != "error"):
            status = "cancelled"
        elif kind == "error":
            message = str(self.last.get("message", ""))
            error = memory_message(limit, message) if self.last.get("out_of_memory") else message
        else:
            error = exit_message(returncode, tail, limit)
        peak = max(rss, self.peak_rss)
        return Outcome(status, self.steps, final, error, peak, tail)

    def close(self) -> None:
        """Wait for the readers (the child is gone, so its pipes reach EOF) and close the pipes."""
        for reader in self._readers:
            reader.join(timeout=5)
        for stream in (self._child.stdout, self._child.stderr):
            if stream is not None:
                stream.close()

    def _see(self, event: dict[str, Any]) -> None:
        if isinstance(event.get("step"), int):
            self.steps = max(self.steps, event["step"])
        if isinstance(event.get("peak_rss_bytes"), int):
            self.peak_rss = event["peak_rss_bytes"]
        if event.get("event") in _TERMINAL:
            self.last = event

    def _read_lines(self, stream: IO[bytes]) -> None:
        for line in stream:
            self._lines.put(line)
        self._lines.put(None)

    def _read_tail(self, stream: IO[bytes]) -> None:
        while chunk := os.read(stream.fileno(), 65536):
            self._tail = (self._tail + chunk)[-_STDERR_KEEP:]


def _capped(timeout_s: float, steps: int) -> str:
    cap = f"{timeout_s / 3600:g} h" if timeout_s >= 3600 else f"{timeout_s:.0f} s"
    return f"stopped at the deployment's time cap of {cap} after {steps} steps"


def _parse(line: bytes) -> dict[str, Any] | None:
    if not line.strip():
        return None
    try:
        event = json.loads(line)
    except ValueError:
        return None
    return event if isinstance(event, dict) and "event" in event else None
