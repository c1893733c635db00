"""The bubblewrap command line for one run: what the program sees, its /etc and its host uid."""

from __future__ import annotations

import fcntl
import os
import shutil
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from benchgen.bundles.trees import chown_tree
from benchgen.core.errors import Conflict

PYTHON_TARGET = "/opt/python"
SOCKET_TARGET = "/run/benchgen/model.sock"
RELAY_TARGET = "/opt/benchgen/relay.py"
RELAY_SOURCE = Path(__file__).with_name("relay.py")
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
# One lock file per uid, shared by every BenchGen process on the machine (servers and workers of
# any deployment): a uid is a machine-wide resource, and a run's end kills all its processes.
# Under /run, which only root may write (unlike /tmp or /run/lock): nobody can hold them first.
_UID_LOCKS = Path("/run/benchgen-uids")


@dataclass(frozen=True)
class Mount:
    """A host directory (or file) shown to the program at `target`."""

    source: Path
    target: str
    writable: bool = False


def bwrap_argv(
    argv: Sequence[str],
    mounts: Sequence[Mount],
    runtime: Path,
    tmp_bytes: int,
    env: Mapping[str, str],
    workdir: str,
    uid: int,
    socket: Path | None,
    etc_args: Sequence[str],
    dirs: Sequence[str],
) -> list[str]:
    """bwrap's argv running `argv` with only the OS, `runtime`'s Python, `mounts` and `dirs`."""
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
    for name, value in program_env(env, f"{PYTHON_TARGET}/bin").items():
        cmd += ["--setenv", name, value]
    # /tmp and /dev/shm live in memory: their size caps are what keeps them from filling it.
    cmd += ["--proc", "/proc", "--dev", "/dev"]
    cmd += ["--perms", "1777", "--size", str(tmp_bytes), "--tmpfs", _TMP]
    cmd += ["--perms", "1777", "--size", str(tmp_bytes // 4), "--tmpfs", _SHM]
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


def program_env(env: Mapping[str, str], python_bin: str) -> dict[str, str]:
    """The program's whole environment: a fixed base, then `env`."""
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
def etc_files(uid: int) -> Iterator[tuple[list[str], list[int]]]:
    """bwrap arguments for a stand-in /etc/passwd and /etc/group, and the fds they read."""
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


def uid_locks_problem() -> str | None:
    """Why this machine's sandbox uids cannot be held here, or None (always None when not
    root: programs then run as our own uid)."""
    if os.geteuid() != 0:
        return None
    try:
        _UID_LOCKS.mkdir(mode=0o700, exist_ok=True)
    except OSError as exc:
        return f"cannot create {_UID_LOCKS}, where sandbox uids are held ({exc.strerror})"
    return None


@contextmanager
def uid_slot() -> Iterator[int]:
    """A host uid for one run, no other run's on this machine while it is held (our own uid
    when not root)."""
    if os.geteuid() != 0:
        yield os.getuid()
        return
    if problem := uid_locks_problem():
        raise Conflict(f"Programs cannot run isolated here: {problem}.")
    # Start at a pid-derived slot so processes rarely try the same locks first.
    start = os.getpid() % _UID_SLOTS
    for slot in range(start, start + _UID_SLOTS):
        uid = _FIRST_UID + slot % _UID_SLOTS
        lock = _lock_uid(uid)
        if lock is not None:
            break
    else:
        raise Conflict("Too many programs are running at once; try again shortly.")
    try:
        yield uid
    finally:
        os.close(lock)  # the lock goes with the descriptor, and with the process if it dies


def _lock_uid(uid: int) -> int | None:
    """An open descriptor holding `uid`'s lock, or None while another run holds it."""
    # flock locks belong to the open file: two opens in one process exclude each other too.
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(_UID_LOCKS / f"{uid}.lock", flags, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


@contextmanager
def lent_to(uid: int, paths: Sequence[Path]) -> Iterator[None]:
    """`paths` owned by `uid` for the run, and by us again after it."""
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
    # Iterative, one folder open at a time: however deep the program nested its folders, the
    # hand-back reaches every entry (a recursive walk would stop partway, leaving them lent).
    for path in paths:
        chown_tree(path, uid, gid)
