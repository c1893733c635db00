"""Telling a job that ran out of memory from other failures: in the child, and from its exit."""

from __future__ import annotations

import errno
import signal

# What the allocators say when a memory limit or the machine refuses them: Python, numpy,
# torch's CPU and CUDA allocators, C++ operator new, and the dynamic loader mapping a library.
_MEMORY_WORDS = (
    "memoryerror",
    "can't allocate memory",
    "cannot allocate memory",
    "unable to allocate",
    "out of memory",
    "bad_alloc",
    "failed to map segment",
)
_MESSAGE_LIMIT = 2000


def is_memory_error(exc: BaseException) -> bool:
    """True for an exception raised because an allocation failed."""
    if isinstance(exc, MemoryError):
        return True
    if isinstance(exc, OSError) and exc.errno == errno.ENOMEM:
        return True
    return mentions_memory(str(exc))


def mentions_memory(text: str) -> bool:
    """True when a message or a stderr tail reads like an allocation failure."""
    lowered = text.lower()
    return any(word in lowered for word in _MEMORY_WORDS)


def describe_exception(exc: BaseException) -> str:
    """One short line for the job's log: the exception's type and message, cut to 2,000 chars."""
    text = f"{type(exc).__name__}: {exc}".strip()
    return text if len(text) <= _MESSAGE_LIMIT else text[:_MESSAGE_LIMIT] + "…"


def memory_message(limit_bytes: int | None, detail: str = "") -> str:
    """The failure message of a job that ran out of memory, naming the limit when one was set."""
    limit = f" (the limit was {limit_bytes / 2**30:.2f} GiB)" if limit_bytes else ""
    suffix = f": {detail}" if detail else ""
    return f"training ran out of memory{limit}; try a smaller batch or sequence length{suffix}"


def exit_message(returncode: int, stderr_tail: str, limit_bytes: int | None) -> str:
    """Why a child that sent no error event ended, from its exit status and its last stderr."""
    if mentions_memory(stderr_tail):
        return memory_message(limit_bytes)
    if returncode == -signal.SIGKILL:
        # Nothing here sent it: the kernel's OOM killer (or an operator) did.
        return memory_message(limit_bytes, "the process was killed by SIGKILL")
    how = f"signal {signal.Signals(-returncode).name}" if returncode < 0 else f"code {returncode}"
    last = next((line for line in reversed(stderr_tail.splitlines()) if line.strip()), "")
    return f"training process exited with {how}" + (f": {last.strip()}" if last else "")
