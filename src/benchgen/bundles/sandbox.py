"""Run an organiser's program under bubblewrap: no network, no host files, no root, bounded."""

from __future__ import annotations

import os
import resource
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import IO

from benchgen.core.errors import Conflict

PYTHON_TARGET = "/opt/python"
SOCKET_TARGET = "/run/benchgen/model.sock"
RELAY_TARGET = "/opt/benchgen/relay.py"
RELAY_SOURCE = Path(__file__).with_name("relay.py")
RELAY_PORT = 8080
# Paths inside the sandbox, on its own tmpfs: the host's /tmp is never shown.
_TMP = "/tmp"  # noqa: S108
_SHM = "/dev/shm"  # noqa: S108
# Only the operating system's read-only program and library trees; never /etc as a whole (host
# names, keys, configs), /root, /home, the server's data dir, the working tree or its .venv.
_SYSTEM_DIRS = ("/usr", "/bin", "/lib", "/lib64", "/sbin")
_ETC_PATHS = ("/etc/ld.so.cache", "/etc/localtime", "/etc/nsswitch.conf", "/etc/alternatives")
# Host uids no account uses: each concurrent run gets its own, so RLIMIT_NPROC (counted per real
# uid, ignored for root) bounds that run's processes alone, and no run can signal or ptrace another.
_FIRST_UID = 61000
_UID_SLOTS = 1000
_POLL_SECONDS = 0.2
_READ_CHUNK = 1 << 16
# A program that makes millions of empty files fills inodes, not bytes: charge each entry a block.
_ENTRY_BYTES = 4096


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
class Mount:
    """A host directory (or file) shown to the program at `target`."""

    source: Path
    target: str
    writable: bool = False


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


_HOST_ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
_slots_lock = threading.Lock()
_slots_used: set[int] = set()


def sandbox_problem(runtime: Path) -> str | None:
    """Say why programs cannot run isolated here, or None when they can."""
    if shutil.which("bwrap") is None:
        return "bubblewrap (bwrap) is not installed"
    if os.geteuid() == 0 and shutil.which("setpriv") is None:
        return "setpriv is not installed, so programs would run as root"
    if not (runtime / "bin" / "python").exists():
        return f"the program runtime {runtime} is missing (run `make sandbox`)"
    return _probe(str(runtime))


@lru_cache(maxsize=8)
def _probe(runtime: str) -> str | None:
    # Whether the kernel lets us make namespaces does not change while we run: probe once.
    with _uid_slot() as uid, _etc_files(uid) as (etc_args, fds):
        cmd = _bwrap_argv(
            ["/bin/true"], [], Path(runtime), Limits(), {}, "/", uid, None, etc_args, ()
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
    limits: Limits = Limits(),
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
    with _uid_slot() as uid, _lent_to(uid, lent), _etc_files(uid) as (etc_args, fds):
        cmd = _bwrap_argv(argv, mounts, runtime, limits, env, workdir, uid, socket, etc_args, dirs)
        outcome = _supervise(cmd, limits, _HOST_ENV, None, fds, watched)
        # The PID namespace died with bwrap; this only makes sure before the uid is lent again.
        _kill_uid(uid)
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
    env = _program_env(env, str(runtime / "bin"))
    watched = [m.source for m in mounts if m.writable]
    cwd_or_none = cwd if os.path.isdir(cwd) else None
    return _supervise([host(a) for a in argv], limits, env, cwd_or_none, [], watched)


def _bwrap_argv(
    argv: Sequence[str],
    mounts: Sequence[Mount],
    runtime: Path,
    limits: Limits,
    env: Mapping[str, str],
    workdir: str,
    uid: int,
    socket: Path | None,
    etc_args: Sequence[str],
    dirs: Sequence[str],
) -> list[str]:
    privileged = os.geteuid() == 0
    cmd = [shutil.which("bwrap") or "bwrap"]
    # Fresh IPC, PID, network (only its own loopback), UTS and cgroup namespaces: the program
    # sees no host process and reaches no host or internet address. Its session is new so it
    # cannot push keystrokes into our terminal (TIOCSTI). It dies when we do.
    cmd += ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts"]
    cmd += ["--unshare-cgroup-try", "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
    if privileged:
        # Kept only so setpriv can become the unprivileged uid; a uid change from 0 clears
        # every capability, and bwrap's no_new_privs stops any being regained through exec.
        cmd += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_SETPCAP"]
    else:
        cmd += ["--unshare-user"]
    cmd += ["--clearenv"]
    for name, value in _program_env(env, f"{PYTHON_TARGET}/bin").items():
        cmd += ["--setenv", name, value]
    # /tmp and /dev/shm live in memory: their size caps are what keeps them from filling it.
    cmd += ["--proc", "/proc", "--dev", "/dev"]
    cmd += ["--perms", "1777", "--size", str(limits.tmp_bytes), "--tmpfs", _TMP]
    cmd += ["--perms", "1777", "--size", str(limits.tmp_bytes // 4), "--tmpfs", _SHM]
    python = _python_binds(runtime)
    targets = [target for _, target in python] + [m.target for m in mounts]
    targets += [SOCKET_TARGET, RELAY_TARGET] if socket is not None else []
    cmd += _parent_dirs([*_ETC_PATHS, *targets, workdir], dirs)
    cmd += _system_args()
    for source, target in python:
        cmd += ["--ro-bind", source, target]
    for mount in mounts:
        cmd += ["--bind" if mount.writable else "--ro-bind", str(mount.source), mount.target]
    if socket is not None:
        cmd += ["--bind", str(socket), SOCKET_TARGET, "--ro-bind", str(RELAY_SOURCE), RELAY_TARGET]
    cmd += [*etc_args, "--chdir", workdir, "--"]
    if privileged:
        cmd += _drop_to(uid)
    return cmd + list(argv)


def _parent_dirs(targets: Sequence[str], dirs: Sequence[str]) -> list[str]:
    # bwrap would make missing mount points 0700 root-owned, out of the program's reach; they
    # are made 0755 first (still root's, so the program cannot write there).
    parents = {str(parent) for t in targets for parent in Path(t).parents if parent != Path("/")}
    parents.update(dirs)
    parents.discard(_TMP)
    args: list[str] = []
    for parent in sorted(parents):
        args += ["--perms", "0755", "--dir", parent]
    return args


def _drop_to(uid: int) -> list[str]:
    # bwrap runs as root here (no user namespace, so uid U is a real host uid whose process count
    # RLIMIT_NPROC bounds); setpriv drops to U with no groups, capabilities or way back.
    setpriv = shutil.which("setpriv") or "setpriv"
    return [
        *(setpriv, f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--no-new-privs"),
        *("--inh-caps=-all", "--bounding-set=-all", "--"),
    ]


def _system_args() -> list[str]:
    args: list[str] = []
    for path in _SYSTEM_DIRS:
        if os.path.islink(path):  # merged /usr: /bin -> usr/bin stays a link
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    for path in _ETC_PATHS:
        args += ["--ro-bind-try", path, path]
    return args


def _python_binds(runtime: Path) -> list[tuple[str, str]]:
    # The venv at /opt/python; its base interpreter at its own path, because the venv's python
    # is a link to it. Only that prefix is shown, even when it sits under /root (pyenv).
    binds = [(str(runtime), PYTHON_TARGET)]
    prefix = _base_prefix(runtime)
    shown = any(prefix == Path(d) or Path(d) in prefix.parents for d in _SYSTEM_DIRS)
    if prefix != Path("/") and not shown:
        binds.append((str(prefix), str(prefix)))
    return binds


def _base_prefix(runtime: Path) -> Path:
    for line in (runtime / "pyvenv.cfg").read_text().splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "home":
            return Path(value.strip()).resolve().parent
    return Path("/")


def _program_env(env: Mapping[str, str], python_bin: str) -> dict[str, str]:
    # Nothing of the server's environment (keys, database URLs) reaches the program.
    base = {
        "PATH": f"{python_bin}:/usr/local/bin:/usr/bin:/bin",
        "HOME": _TMP,
        "TMPDIR": _TMP,
        "USER": "sandbox",
        "LOGNAME": "sandbox",
        "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
    }
    return {**base, **env}


@contextmanager
def _etc_files(uid: int) -> Iterator[tuple[list[str], list[int]]]:
    # The host's account list is not the program's business, but tools expect its uid to have
    # a name: a two-line passwd and group, handed to bwrap through pipes.
    files = {
        "/etc/passwd": f"root:x:0:0::/:/usr/sbin/nologin\nsandbox:x:{uid}:{uid}::{_TMP}:/bin/sh\n",
        "/etc/group": f"root:x:0:\nsandbox:x:{uid}:\n",
    }
    args: list[str] = []
    fds: list[int] = []
    try:
        for target, text in files.items():
            read_end, write_end = os.pipe()
            fds.append(read_end)
            os.write(write_end, text.encode())  # far below a pipe's buffer: cannot block
            os.close(write_end)
            args += ["--perms", "0444", "--ro-bind-data", str(read_end), target]
        yield args, fds
    finally:
        for fd in fds:
            os.close(fd)


@contextmanager
def _uid_slot() -> Iterator[int]:
    if os.geteuid() != 0:
        yield os.getuid()
        return
    # Start at a pid-derived slot so two server processes rarely pick the same uid; within one
    # process the lock makes the uid exclusive to one run.
    with _slots_lock:
        start = os.getpid() % _UID_SLOTS
        free = (s % _UID_SLOTS for s in range(start, start + _UID_SLOTS))
        slot = next((s for s in free if s not in _slots_used), None)
        if slot is None:
            raise Conflict("Too many programs are running at once; try again shortly.")
        _slots_used.add(slot)
    try:
        yield _FIRST_UID + slot
    finally:
        with _slots_lock:
            _slots_used.discard(slot)


@contextmanager
def _lent_to(uid: int, paths: Sequence[Path]) -> Iterator[None]:
    # The program's uid must own what it may write; afterwards everything goes back to us, so a
    # later run lent the same uid cannot touch it. lchown never follows a link the program made,
    # and hard links to files elsewhere cannot cross the bind mounts (EXDEV).
    if os.geteuid() != 0:
        yield
        return
    _chown_tree(paths, uid, uid)
    try:
        yield
    finally:
        _chown_tree(paths, os.getuid(), os.getgid())


def _chown_tree(paths: Sequence[Path], uid: int, gid: int) -> None:
    for path in paths:
        os.lchown(path, uid, gid)
        if path.is_dir() and not path.is_symlink():
            for folder, dirs, files in os.walk(path, followlinks=False):
                for name in dirs + files:
                    with suppress(FileNotFoundError):
                        os.lchown(os.path.join(folder, name), uid, gid)


def _supervise(
    cmd: list[str],
    limits: Limits,
    env: Mapping[str, str],
    cwd: str | None,
    fds: list[int],
    watched: list[Path],
) -> Outcome:
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
    if watched and _written(watched) > limits.written_bytes:
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


def _kill_uid(uid: int) -> None:
    if os.geteuid() != 0 or uid == os.getuid():
        return  # only a uid lent to a program is swept, never our own
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            with suppress(OSError):
                if entry.stat().st_uid == uid:
                    os.kill(int(entry.name), signal.SIGKILL)


def _written(paths: list[Path]) -> int:
    total = 0
    pending = [str(p) for p in paths]
    while pending:
        with suppress(OSError), os.scandir(pending.pop()) as entries:
            for entry in entries:
                with suppress(OSError):
                    info = entry.stat(follow_symlinks=False)
                    # Sparse files count at their size: copying them later would write it all.
                    total += max(info.st_size, info.st_blocks * 512, _ENTRY_BYTES)
                    if entry.is_dir(follow_symlinks=False):
                        pending.append(entry.path)
    return total


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
