"""The hostile model at any scale: as many attacks as asked, then the referee's verdict.

Plays the adversary of `tests/agent/hostile.py` (the same one `make test` runs a bounded number
of) against the real harness on a fresh database — SQLite in a temporary folder, or PostgreSQL
with `--database-url` — and prints attempts, user approvals, breaches and the rate per second.
Breaches must be 0; the script exits 1 otherwise.

Run from the repository root:

    .venv/bin/python bench/agent_hostile.py --attempts 20000
    .venv/bin/python bench/agent_hostile.py --attempts 5000 --seed 7 \
        --database-url postgresql+psycopg://postgres@127.0.0.1/bench
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the tests package

from tests.agent.hostile import Driver, Tally, build_scene, referee, snapshot
from tests.support import World

from benchgen.core.clock import ManualClock
from benchgen.core.config import Settings
from benchgen.services.runtime import build_runtime

console = Console()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attempts", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=0, help="the first of the seeds used")
    parser.add_argument("--database-url", default=None, help="an empty database to use")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        settings = Settings(
            data_dir=Path(folder),
            database_url=args.database_url,
            worker_threads=0,
            argon2_time_cost=1,
            argon2_memory_kib=64,
        )
        clock = ManualClock()
        runtime = build_runtime(settings, clock)
        world = World(runtime)
        scene = build_scene(world)
        before, tally, seed = snapshot(world, scene), Tally(), args.seed
        started = time.perf_counter()
        while tally.attempts < args.attempts:
            rng = random.Random(seed)  # noqa: S311 - seeded on purpose: a breach can be replayed
            Driver(world, clock, scene, rng, tally).play(messages=10)
            seed += 1
        referee(world, scene, tally, before)
        seconds = time.perf_counter() - started
        runtime.close()
    table = Table(title="Hostile model against the agent harness")
    for column in ("attempts", "user approvals", "breaches", "seeds", "attempts/s"):
        table.add_column(column, justify="right")
    table.add_row(
        str(tally.attempts),
        str(len(tally.approved)),
        str(len(tally.breaches)),
        f"{args.seed}–{seed - 1}",
        f"{tally.attempts / seconds:.0f}",
    )
    console.print(table)
    for breach in tally.breaches[:20]:
        console.print(f"[red]breach:[/red] {breach}")
    sys.exit(1 if tally.breaches else 0)


if __name__ == "__main__":
    main()
