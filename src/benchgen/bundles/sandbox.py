"""Run an organiser's program under bubblewrap: no network, no host files, no root, bounded."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path

from benchgen.bundles.bwrap import (
    PYTHON_TARGET,
    RELAY_SOURCE,
    RELAY_TARGET,
    SOCKET_TARGET,
    Mount,
    bwrap_argv,
    etc_files,
    lent_to,
    program_env,
    uid_locks_problem,
    uid_slot,
)
from benchgen.bundles.supervisor import Limits, Outcome, kill_uid, supervise
from benchgen.core.errors import Conflict

__all__ = [
    "PYTHON_TARGET",
    "RELAY_PORT",
    "RELAY_SOURCE",
    "RELAY_TARGET",
    "SOCKET_TARGET",
    "Limits",
    "Mount",
    "Outcome",
    "run_sandboxed",
    "sandbox_problem",
]

RELAY_PORT = 8080

_HOST_ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}


def sandbox_problem(runtime: Path) -> str | None:
    """Say why programs cannot run isolated here, or None when they can."""
    if shutil.which("bwrap") is None:
        return "bubblewrap (bwrap) is not installed"
    if os.geteuid() == 0 and shutil.which("setpriv") is None:
        return "setpriv is not installed, so programs would run as root"
    if problem := uid_locks_problem():
        return problem
    if not (runtime / "bin" / "python").exists():
        return (
            f"the program runtime {runtime} is missing (run `make sandbox` in the checkout, or "
            "point BENCHGEN_SANDBOX_RUNTIME at one)"
        )
    return _probe(str(runtime))


@lru_cache(maxsize=8)
def _probe(runtime: str) -> str | None:
    # Whether the kernel lets us make namespaces does not change while we run: probe once.
    with uid_slot() as uid, etc_files(uid) as (etc_args, fds):
        cmd = bwrap_argv(
            ["/bin/true"], [], Path(runtime), Limits().tmp_bytes, {}, "/", uid, None, etc_args, ()
        )
        done = subprocess.run(  # noqa: S603 - our own argv, no shell
            cmd,
            capture_output=True,
            text=True,
            timeout=30,
            env=_HOST_ENV,
            pass_fds=fds,
            check=False,
        )
    if done.returncode != 0:
        return f"bubblewrap cannot create the sandbox ({done.stderr.strip() or done.returncode})"
    return None


def run_sandboxed(
    argv: Sequence[str],
    mounts: Sequence[Mount],
    *,
    runtime: Path,
    limits: Limits = Limits(),  # noqa: B008 - frozen, so one shared default is safe
    env: Mapping[str, str] = {},
    workdir: str = "/app/program",
    socket: Path | None = None,
    allow_unsandboxed: bool = False,
    dirs: Sequence[str] = (),
) -> Outcome:
    """Run `argv` isolated, with only `mounts`, the OS's read-only files and `runtime`'s Python.

    The program sees no network but its own loopback, no host process, none of the host's files
    beyond /usr and the libraries, runs as an unprivileged uid, and is stopped past `limits`.
    With `socket`, the program reaches the model through 127.0.0.1:8080, relayed to that socket.
    `dirs` are empty folders made in the sandbox (root's, so the program cannot write there).

    When this host cannot isolate programs (see `sandbox_problem`), the run is refused unless the
    operator set `allow_unsandboxed`: then it runs directly on the host with rlimits only, which
    protects against runaway programs, not hostile ones (they can read what the server can).

    Raises:
        Conflict: programs cannot run isolated here and unsandboxed runs are not allowed.
    """
    problem = sandbox_problem(runtime)
    if problem is not None and not allow_unsandboxed:
        raise Conflict(
            f"Programs cannot run isolated here: {problem}. Install bubblewrap and run "
            "`make sandbox`, or have the operator allow unsandboxed programs."
        )
    if socket is not None:
        # The relay pumps 127.0.0.1:8080 to the model socket, then execs the program itself.
        argv = [
            f"{PYTHON_TARGET}/bin/python",
            RELAY_TARGET,
            *("--socket", SOCKET_TARGET, "--port", str(RELAY_PORT), "--"),
            *argv,
        ]
    if problem is not None:
        return _run_unsandboxed(list(argv), mounts, runtime, limits, env, workdir, socket)
    return _run(list(argv), mounts, runtime, limits, env, workdir, socket, dirs)


def _run(
    argv: list[str],
    mounts: Sequence[Mount],
    runtime: Path,
    limits: Limits,
    env: Mapping[str, str],
    workdir: str,
    socket: Path | None,
    dirs: Sequence[str],
) -> Outcome:
    watched = [m.source for m in mounts if m.writable]
    lent = watched + ([socket] if socket is not None else [])
    with uid_slot() as uid, lent_to(uid, lent), etc_files(uid) as (etc_args, fds):
        cmd = bwrap_argv(
            argv, mounts, runtime, limits.tmp_bytes, env, workdir, uid, socket, etc_args, dirs
        )
        try:
            outcome = supervise(cmd, limits, _HOST_ENV, None, fds, watched)
        finally:
            # The PID namespace died with bwrap; this only makes sure before the uid is lent
            # again, also when supervising failed.
            kill_uid(uid)
    return outcome


def _run_unsandboxed(
    argv: list[str],
    mounts: Sequence[Mount],
    runtime: Path,
    limits: Limits,
    env: Mapping[str, str],
    workdir: str,
    socket: Path | None,
) -> Outcome:
    # Without mounts, the sandbox paths in the command are rewritten to the host paths (longest
    # first, so /app/input_data wins over /app/input); a program that hard-codes them fails.
    pairs = [(m.target, str(m.source)) for m in mounts]
    pairs += [(RELAY_TARGET, str(RELAY_SOURCE)), (PYTHON_TARGET, str(runtime))]
    pairs += [(SOCKET_TARGET, str(socket))] if socket is not None else []
    pairs.sort(key=lambda pair: len(pair[0]), reverse=True)

    def host(text: str) -> str:
        for target, source in pairs:
            text = text.replace(target, source)
        return text

    cwd = host(workdir)
    env = program_env(env, str(runtime / "bin"))
    watched = [m.source for m in mounts if m.writable]
    cwd_or_none = cwd if os.path.isdir(cwd) else None
    return supervise([host(a) for a in argv], limits, env, cwd_or_none, [], watched)
