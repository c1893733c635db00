"""Hostile programs stay inside the sandbox and are stopped at their limits."""

from __future__ import annotations

import errno
import json
import os
import socket
import subprocess
import sys
import textwrap
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from benchgen.bundles import bwrap, sandbox, supervisor
from benchgen.bundles.sandbox import Limits, Mount, Outcome, run_sandboxed, sandbox_problem
from benchgen.core.config import Settings
from benchgen.core.errors import Conflict
from tests.bundle_factory import SANDBOX_RUNTIME, require_sandbox
from tests.processes import processes_running

REPO = Path(__file__).resolve().parents[2]
SMALL = Limits(wall_seconds=10, cpu_seconds=5, memory_bytes=512 << 20, processes=32)


@pytest.fixture(scope="module")
def runtime() -> Path:
    return require_sandbox()


def run_python(
    tmp_path: Path,
    runtime: Path,
    code: str,
    limits: Limits = SMALL,
    mounts: Sequence[Mount] = (),
) -> Outcome:
    program, output = tmp_path / "program", tmp_path / "output"
    program.mkdir(exist_ok=True)
    output.mkdir(exist_ok=True)
    (program / "main.py").write_text(textwrap.dedent(code))
    base = [Mount(program, "/app/program"), Mount(output, "/app/output", writable=True)]
    return run_sandboxed(["python", "main.py"], [*base, *mounts], runtime=runtime, limits=limits)


def run_json(tmp_path: Path, runtime: Path, code: str, **kwargs: Any) -> Any:
    outcome = run_python(tmp_path, runtime, code, **kwargs)
    assert outcome.ok, outcome
    return json.loads(outcome.stdout)


def test_a_trivial_program_runs_as_an_unprivileged_uid(tmp_path: Path, runtime: Path) -> None:
    outcome = run_python(tmp_path, runtime, "import os, sys; print(os.getuid(), sys.prefix)")
    assert outcome.ok and outcome.stopped is None
    uid, prefix = outcome.stdout.split()
    assert int(uid) != 0 and prefix == "/opt/python"
    shell = run_sandboxed(["sh", "-c", "id -u"], [], runtime=runtime, workdir="/")
    assert shell.ok and int(shell.stdout) != 0


def test_concurrent_runs_get_distinct_uids(runtime: Path) -> None:
    def uid() -> str:
        outcome = run_sandboxed(["sh", "-c", "sleep 0.3; id -u"], [], runtime=runtime, workdir="/")
        assert outcome.ok, outcome
        return outcome.stdout

    with ThreadPoolExecutor(max_workers=3) as pool:
        uids = list(pool.map(lambda _: uid(), range(3)))
    assert len(set(uids)) == 3


@pytest.mark.skipif(os.geteuid() != 0, reason="host uids are lent only when running as root")
def test_a_uid_is_held_machine_wide_until_its_process_ends() -> None:
    # The other process starts its search at this one's slot (its pid-derived start), as two
    # workers on one machine sometimes do: only the machine-wide lock keeps their uids apart.
    holder = textwrap.dedent(f"""
        import os, sys, time
        os.getpid = lambda: {os.getpid()}
        from benchgen.bundles.bwrap import uid_slot
        with uid_slot() as uid:
            print(uid, flush=True)
            time.sleep(600)
    """)
    other = subprocess.Popen([sys.executable, "-c", holder], stdout=subprocess.PIPE, text=True)  # noqa: S603
    try:
        assert other.stdout is not None
        held = int(other.stdout.readline())
        with bwrap.uid_slot() as mine:
            assert mine != held
    finally:
        other.kill()
        other.wait(10)
    with bwrap.uid_slot() as mine:
        assert mine == held  # a killed holder frees its uid with no clean-up of its own


@pytest.mark.skipif(os.geteuid() != 0, reason="host uids are lent only when running as root")
def test_a_run_when_every_uid_is_lent_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bwrap, "_UID_SLOTS", 1)
    with bwrap.uid_slot(), pytest.raises(Conflict, match="Too many programs"), bwrap.uid_slot():
        pass


@pytest.mark.skipif(os.geteuid() != 0, reason="host uids are lent only when running as root")
def test_a_machine_where_uids_cannot_be_held_says_why(
    tmp_path: Path, runtime: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a-file").write_text("")
    monkeypatch.setattr(bwrap, "_UID_LOCKS", tmp_path / "a-file" / "uids")
    problem = sandbox_problem(runtime)
    assert problem is not None and "where sandbox uids are held (Not a directory)" in problem
    with pytest.raises(Conflict, match="cannot run isolated here"), bwrap.uid_slot():
        pass


def test_a_uid_is_swept_before_it_is_lent_again_even_when_supervising_fails(
    runtime: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    swept: list[int] = []

    def broken(*_: Any) -> Outcome:
        raise OSError("supervisor failed")

    monkeypatch.setattr(sandbox, "supervise", broken)
    monkeypatch.setattr(sandbox, "kill_uid", swept.append)
    with pytest.raises(OSError, match="supervisor failed"):
        run_sandboxed(["true"], [], runtime=runtime, workdir="/")
    assert len(swept) == 1


def test_the_scientific_stack_imports(tmp_path: Path, runtime: Path) -> None:
    code = "import numpy, pandas, scipy, sklearn, yaml; print(numpy.arange(3).sum())"
    outcome = run_python(tmp_path, runtime, code, limits=Limits(wall_seconds=60))
    assert outcome.ok, outcome.stderr
    assert outcome.stdout.strip() == "3"


def test_a_sleeping_loop_is_stopped_at_the_wall_time_limit(tmp_path: Path, runtime: Path) -> None:
    limits = Limits(wall_seconds=1, cpu_seconds=5)
    outcome = run_python(tmp_path, runtime, "import time\nwhile True: time.sleep(0.01)", limits)
    assert outcome.stopped == "stopped at the wall-time limit of 1 s"
    assert outcome.exit_code is None and not outcome.ok
    assert outcome.seconds < 5


def test_a_busy_loop_is_stopped_at_the_cpu_limit(tmp_path: Path, runtime: Path) -> None:
    outcome = run_python(tmp_path, runtime, "while True: pass", Limits(cpu_seconds=1))
    assert outcome.stopped == "stopped: CPU time limit of 1 s"
    assert outcome.seconds < 5


def test_a_memory_hog_is_stopped_at_the_memory_limit(tmp_path: Path, runtime: Path) -> None:
    limits = Limits(memory_bytes=256 << 20)
    outcome = run_python(tmp_path, runtime, "block = bytearray(2 << 30)", limits)
    assert outcome.stopped == "stopped: memory limit of 256 MiB"
    assert "MemoryError" in outcome.stderr


def test_a_fork_bomb_is_bounded_by_the_process_limit(tmp_path: Path, runtime: Path) -> None:
    code = """
        import os, time
        children = 0
        try:
            while True:
                if os.fork() == 0:
                    time.sleep(30)
                    os._exit(0)
                children += 1
        except OSError as exc:
            print(children, exc.errno)
    """
    outcome = run_python(tmp_path, runtime, code, Limits(processes=16, wall_seconds=10))
    children, code_ = outcome.stdout.split()
    assert int(children) < 16 and int(code_) == errno.EAGAIN
    assert outcome.seconds < 5  # its sleeping children died with it
    assert subprocess.run(["/bin/true"], check=False).returncode == 0


def test_a_shell_fork_bomb_is_stopped_and_cleaned_up(runtime: Path) -> None:
    limits = Limits(wall_seconds=1, processes=32)
    # The bomb starts in a subshell and the shell then waits without forking: a `sleep` there,
    # or the bomb's first fork in the shell itself, lost the race to the bomb on a busy machine
    # ("Cannot fork", fatal to the shell) and the shell ended before the wall-time limit.
    bomb = "bomb() { bomb | bomb & }; (bomb); while :; do :; done  # bomb-986"
    outcome = run_sandboxed(["sh", "-c", bomb], [], runtime=runtime, limits=limits, workdir="/")
    assert outcome.stopped == "stopped at the wall-time limit of 1 s"
    assert not processes_running(b"bomb-986")
    assert subprocess.run(["/bin/true"], check=False).returncode == 0


def test_the_network_is_unreachable(tmp_path: Path, runtime: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        code = f"""
            import json, socket
            result = {{}}
            for host, port in (("127.0.0.1", {port}), ("1.1.1.1", 53), ("1.1.1.1", 443)):
                try:
                    socket.create_connection((host, port), timeout=2).close()
                    result[host + ":" + str(port)] = "connected"
                except OSError as exc:
                    result[host + ":" + str(port)] = exc.__class__.__name__
            print(json.dumps(result))
        """
        result = run_json(tmp_path, runtime, code)
    assert "connected" not in result.values(), result


def test_writing_outside_the_output_folder_fails(tmp_path: Path, runtime: Path) -> None:
    ref = tmp_path / "ref"
    ref.mkdir()
    code = """
        import json
        result = {}
        for path in ("/etc/x", "/usr/x", "/x", "/app/program/x", "/app/input/ref/x",
                     "/opt/python/x", "/app/output/ok", "/tmp/ok"):
            try:
                open(path, "w").write("x")
                result[path] = 0
            except OSError as exc:
                result[path] = exc.errno
        print(json.dumps(result))
    """
    result = run_json(tmp_path, runtime, code, mounts=[Mount(ref, "/app/input/ref")])
    assert result.pop("/app/output/ok") == 0
    assert result.pop("/tmp/ok") == 0  # noqa: S108 - the sandbox's own /tmp
    assert all(code in (errno.EROFS, errno.EACCES, errno.EPERM) for code in result.values())
    assert list(ref.iterdir()) == []
    assert (tmp_path / "output" / "ok").stat().st_uid == os.getuid()  # handed back to us


def test_host_secrets_and_environment_stay_hidden(
    tmp_path: Path, runtime: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "benchgen.db").write_text("users")
    (data / "secret.key").write_text("key")
    monkeypatch.setenv("BENCHGEN_CANARY", "leaked")
    paths = [data, data / "benchgen.db", data / "secret.key", REPO, REPO / ".venv"]
    paths += [Path(sys.prefix), Path("/root/.ssh"), Path("/etc/shadow"), Path("/home")]
    code = f"""
        import json, os
        paths = {[str(p) for p in paths]!r}
        root = sorted(os.listdir("/root")) if os.path.isdir("/root") else []
        print(json.dumps({{"seen": [p for p in paths if os.path.lexists(p)],
                          "root": root, "env": dict(os.environ)}}))
    """
    result = run_json(tmp_path, runtime, code)
    assert result["seen"] == []
    prefix = bwrap._base_prefix(runtime)
    # Only the path to the base interpreter's prefix may show under /root (a pyenv install).
    allowed = [prefix.relative_to("/root").parts[0]] if prefix.is_relative_to("/root") else []
    assert result["root"] == allowed
    assert "BENCHGEN_CANARY" not in result["env"]
    assert result["env"]["HOME"] == "/tmp"  # noqa: S108 - the sandbox's own /tmp
    assert result["env"]["OMP_NUM_THREADS"] == "1"


def test_printing_forever_is_stopped_by_the_output_limit(tmp_path: Path, runtime: Path) -> None:
    limits = Limits(output_chars=10_000, wall_seconds=10)
    outcome = run_python(tmp_path, runtime, "while True: print('x' * 1000)", limits)
    assert outcome.stopped == "stopped: output limit (output past 10000 characters)"
    assert outcome.stdout.startswith("x" * 1000)
    assert len(outcome.stdout) < 10_100 and outcome.stdout.endswith("characters]")
    assert outcome.seconds < 5


def test_writing_a_huge_file_is_stopped(tmp_path: Path, runtime: Path) -> None:
    code = """
        with open("/app/output/big", "wb") as handle:
            while True:
                handle.write(b"x" * (1 << 20))
                handle.flush()
    """
    limits = Limits(written_bytes=20 << 20, wall_seconds=20)
    outcome = run_python(tmp_path, runtime, code, limits)
    assert outcome.stopped == "stopped: wrote more than 20 MiB"
    assert outcome.seconds < 10
    capped = run_python(tmp_path, runtime, code, Limits(file_bytes=5 << 20))
    assert capped.stopped == "stopped: file size limit of 5 MiB"
    assert (tmp_path / "output" / "big").stat().st_size <= 5 << 20


def test_a_write_past_the_limit_between_polls_is_named_so(
    tmp_path: Path, runtime: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A program that wrote past its limit and met the file size limit before the next poll
    (a loaded machine, a fast disk) was said to have met the file size limit."""
    monkeypatch.setattr(supervisor, "_POLL_SECONDS", 30)
    code = """
        with open("/app/output/big", "wb") as handle:
            while True:
                handle.write(b"x" * (1 << 20))
    """
    limits = Limits(written_bytes=4 << 20, file_bytes=8 << 20, wall_seconds=20)
    outcome = run_python(tmp_path, runtime, code, limits)
    assert outcome.stopped == "stopped: wrote more than 4 MiB"


def test_tmp_is_capped(tmp_path: Path, runtime: Path) -> None:
    code = """
        try:
            open("/tmp/big", "wb").write(b"x" * (32 << 20))
        except OSError as exc:
            print(exc.errno)
    """
    outcome = run_python(tmp_path, runtime, code, Limits(tmp_bytes=8 << 20))
    assert outcome.ok and int(outcome.stdout) == errno.ENOSPC


def test_no_process_is_left_behind(tmp_path: Path, runtime: Path) -> None:
    stuck = "sleep 987 & setsid sleep 988 & exec python -c 'while True: pass'"
    limits = Limits(wall_seconds=1)
    outcome = run_sandboxed(["sh", "-c", stuck], [], runtime=runtime, limits=limits, workdir="/")
    assert outcome.stopped == "stopped at the wall-time limit of 1 s"
    done = "setsid sleep 989 & sleep 990 & echo done"
    quick = run_sandboxed(["sh", "-c", done], [], runtime=runtime, workdir="/")
    assert quick.ok and quick.stdout == "done\n" and quick.seconds < 5
    for marker in ("sleep 987", "sleep 988", "sleep 989", "sleep 990"):
        assert not processes_running(marker.encode())


def test_the_default_runtime_is_the_checkouts_from_any_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`benchgen serve` started outside the checkout still finds what `make sandbox` built."""
    monkeypatch.delenv("BENCHGEN_SANDBOX_RUNTIME", raising=False)
    monkeypatch.chdir(tmp_path)
    assert Settings(data_dir=tmp_path).sandbox_runtime == SANDBOX_RUNTIME


def test_refuses_to_run_unisolated_unless_allowed(tmp_path: Path) -> None:
    missing = tmp_path / "no-runtime"
    assert "make sandbox" in (sandbox_problem(missing) or "")
    with pytest.raises(Conflict, match="cannot run isolated here"):
        run_sandboxed(["true"], [], runtime=missing)
    output = tmp_path / "output"
    output.mkdir()
    mounts = [Mount(output, "/app/output", writable=True)]
    argv = ["sh", "-c", "echo hi > /app/output/hi; cat /app/output/hi"]
    outcome = run_sandboxed(argv, mounts, runtime=missing, allow_unsandboxed=True)
    assert outcome.ok and outcome.stdout == "hi\n"


def test_a_model_socket_runs_the_program_behind_the_relay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[list[str]] = []

    def fake_run(argv: list[str], *args: object) -> Outcome:
        seen.append(argv)
        return Outcome(0, "", "", None, 0.0)

    monkeypatch.setattr(sandbox, "sandbox_problem", lambda runtime: None)
    monkeypatch.setattr(sandbox, "_run", fake_run)
    run_sandboxed(["python", "x.py"], [], runtime=tmp_path, socket=tmp_path / "model.sock")
    relay = ["/opt/python/bin/python", "/opt/benchgen/relay.py", "--socket"]
    assert seen == [[*relay, "/run/benchgen/model.sock", "--port", "8080", "--", "python", "x.py"]]
