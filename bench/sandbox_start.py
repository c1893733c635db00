"""What the sandbox costs a program: start-up of the same Python command run bare and inside
bubblewrap, side by side in one run.

What is measured: for each command (an empty program, and one importing the scientific stack a
scoring program typically imports), the wall time of `.sandbox-venv/bin/python -c CODE` started
directly, and of the same command through `bundles.sandbox.run_sandboxed` (namespaces, mounts,
unprivileged uid, limits, output capture). Medians of `--repeat` runs (default 5) after one
warm-up each; the table shows both and the overhead.

Run (bubblewrap installed, `make sandbox` done):

    .venv/bin/python bench/sandbox_start.py
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from rich.console import Console
from rich.table import Table

from benchgen.bundles.sandbox import Mount, run_sandboxed, sandbox_problem

RUNTIME = Path(__file__).resolve().parents[1] / ".sandbox-venv"
PROGRAMS = {
    "empty program": "pass",
    "import numpy, pandas, sklearn": "import numpy, pandas, sklearn.metrics",
}


def bare(code: str) -> float:
    started = time.perf_counter()
    # The bench's own fixed programs, run with the sandbox's Python: no outside input.
    subprocess.run([str(RUNTIME / "bin" / "python"), "-c", code], check=True)  # noqa: S603
    return time.perf_counter() - started


def sandboxed(code: str) -> float:
    with tempfile.TemporaryDirectory() as folder:
        program = Path(folder) / "program"
        program.mkdir()
        started = time.perf_counter()
        outcome = run_sandboxed(
            ["python", "-c", code], [Mount(program, "/app/program")], runtime=RUNTIME
        )
        elapsed = time.perf_counter() - started
    if not outcome.ok:
        raise SystemExit(f"the sandboxed program failed: {outcome.stopped or outcome.stderr}")
    return elapsed


def median(measure: Callable[[str], float], code: str, repeat: int) -> float:
    measure(code)  # warm-up: the page cache, the sandbox probe
    return statistics.median(measure(code) for _ in range(repeat))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    problem = sandbox_problem(RUNTIME)
    if problem:
        raise SystemExit(f"no sandbox here: {problem}")
    table = Table(title=f"Start-up, median of {args.repeat}")
    for column in ("program", "bare", "sandboxed", "overhead"):
        table.add_column(column)
    for name, code in PROGRAMS.items():
        plain = median(bare, code, args.repeat)
        boxed = median(sandboxed, code, args.repeat)
        table.add_row(
            name,
            f"{plain * 1000:.0f} ms",
            f"{boxed * 1000:.0f} ms",
            f"{(boxed - plain) * 1000:+.0f} ms",
        )
    Console().print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
