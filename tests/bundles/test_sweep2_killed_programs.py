"""A program killed by SIGKILL well before it could have used its CPU time (by itself, or by
the kernel's out-of-memory killer) is not said to have met the CPU time limit: that would send
its author to the wrong limit."""

from __future__ import annotations

from pathlib import Path

from benchgen.bundles.sandbox import Limits, Mount, run_sandboxed
from tests.bundle_factory import require_sandbox

KILL_ITSELF = "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n"


def _run(tmp_path: Path, code: str, limits: Limits) -> tuple[str | None, int | None]:
    program = tmp_path / "program"  # tmp_path itself is closed to the sandbox's uid
    program.mkdir()
    (program / "main.py").write_text(code)
    outcome = run_sandboxed(
        ["/bin/sh", "-c", "python main.py"],
        [Mount(program, "/app/program")],
        runtime=require_sandbox(),
        limits=limits,
        workdir="/app/program",
    )
    return outcome.stopped, outcome.exit_code


def test_a_program_that_kills_itself_is_not_at_the_cpu_limit(tmp_path: Path) -> None:
    stopped, _ = _run(tmp_path, KILL_ITSELF, Limits(wall_seconds=60, cpu_seconds=600))
    assert stopped == "stopped: killed by SIGKILL (by itself or the system, not at a limit)"


def test_a_busy_loop_ignoring_sigxcpu_is_still_at_the_cpu_limit(tmp_path: Path) -> None:
    # The soft limit's SIGXCPU ignored, the hard limit a second later kills with SIGKILL.
    code = "import signal\nsignal.signal(signal.SIGXCPU, signal.SIG_IGN)\nwhile True: pass\n"
    stopped, _ = _run(tmp_path, code, Limits(wall_seconds=30, cpu_seconds=1))
    assert stopped == "stopped: CPU time limit of 1 s"
