"""Server start: seconds from `benchgen serve` to its first 200 on /healthz, the current code
beside a git revision's, with the offline brain and with an OpenAI-compatible one.

What is measured: a data folder is migrated once (`benchgen db upgrade`); then, for each brain
and each code, `benchgen serve` starts on a free port of 127.0.0.1 (as `bench/api_load.py` starts
it) and /healthz is polled every 20 ms until it answers 200; the process is then stopped. The
OpenAI-compatible brain points at 127.0.0.1:9, where nothing listens: building it needs no
connection, and start-up never makes one. The codes take turns `--repeats` times (default 3) and
the table shows medians. With `--baseline-rev REV` the revision's `src/` (extracted with `git
archive`, the checkout untouched) is put first on PYTHONPATH, as in the other benches; bytecode
is compiled first for both.

Run:

    .venv/bin/python bench/server_start.py --baseline-rev 7eb2404
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from api_load import cli, serve
from baseline import baseline_src, warm_bytecode
from rich.console import Console
from rich.table import Table

BRAINS = {
    "offline (default)": {},
    "OpenAI-compatible": {
        "BENCHGEN_AGENT_MODEL": "openai:model",
        "BENCHGEN_AGENT_BASE_URL": "http://127.0.0.1:9/v1",
    },
}


def started_in(data_dir: Path, src: Path | None, brain: dict[str, str]) -> float:
    """Seconds from launching `benchgen serve` to its first healthy answer (it is then stopped)."""
    began = time.perf_counter()
    with serve(data_dir, 1, src, brain):
        return time.perf_counter() - began


def measure(codes: dict[str, Path | None], repeats: int, data_dir: Path) -> dict[str, list[float]]:
    """Start-up times per (brain, code), the codes taking turns."""
    data_dir.mkdir()
    cli(data_dir, None, "db", "upgrade")
    times: dict[str, list[float]] = {}
    for _ in range(repeats):
        for brain, settings in BRAINS.items():
            for label, src in codes.items():
                took = started_in(data_dir, src, settings)
                times.setdefault(f"{brain}\t{label}", []).append(took)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline-rev", help="also measure this git revision's src/")
    parser.add_argument("--repeats", type=int, default=3, help="turns of each code (default 3)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        codes: dict[str, Path | None] = {"current": None}
        if args.baseline_rev:
            codes[args.baseline_rev] = baseline_src(args.baseline_rev, Path(folder) / "base")
        for src in codes.values():
            warm_bytecode(src)
        times = measure(codes, args.repeats, Path(folder) / "data")
    table = Table(title=f"benchgen serve to its first healthy answer · median of {args.repeats}")
    for column in ("brain", "code", "seconds", "each run"):
        table.add_column(column)
    for key, runs in times.items():
        brain, label = key.split("\t")
        each = ", ".join(f"{took:.2f}" for took in runs)
        table.add_row(brain, label, f"{statistics.median(runs):.2f}", each)
    Console(width=None if sys.stdout.isatty() else 120).print(table)


if __name__ == "__main__":
    main()
