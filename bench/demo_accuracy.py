"""The offline demo's accuracy under each qa scoring method, side by side from one run.

What is measured: a fresh SQLite database in a temporary folder gets the demo's qa benchmark
(World Capitals and Geography, questions and keys exactly as `benchgen demo` makes them); the
bundled SmolLM2-135M model (local GGUF, no network) answers it once; then the saved answers are
rescored (a dry run: nothing changes) with every qa method that needs no model, and the table
shows each method's accuracy. Exact match is what the demo used before `includes` existed.

Run:

    .venv/bin/python bench/demo_accuracy.py
"""

from __future__ import annotations

import json
import sys
import tempfile
from importlib import resources
from pathlib import Path

from rich.console import Console
from rich.table import Table

from benchgen.core.config import Settings
from benchgen.core.context import Principal
from benchgen.jobs.worker import Worker
from benchgen.services import models
from benchgen.services.accounts import users
from benchgen.services.benchmarks import lifecycle
from benchgen.services.runs import launch, rescoring
from benchgen.services.runtime import build_runtime, transaction

METHODS = (
    {"method": "exact"},
    {"method": "includes"},
    {"method": "includes", "options": {"number_words": True}},
    {"method": "f1"},
)


def main() -> int:
    specs = json.loads(
        resources.files("benchgen").joinpath("data/demo_benchmarks.json").read_text("utf-8")
    )
    demo = next(spec for spec in specs["benchmarks"] if spec["format"] == "qa")
    demo = {key: demo[key] for key in ("title", "format", "description", "questions")}
    with tempfile.TemporaryDirectory() as folder:
        settings = Settings(data_dir=Path(folder), worker_threads=0)
        runtime = build_runtime(settings)
        with transaction(runtime, Principal.cli()) as ctx:
            local = models.register_local_models(ctx)
            user = users.create_user(ctx, "bench@example.com", "bench-password-1")
        if local is None:
            print("SmolLM2 is not installed (make install installs it)", file=sys.stderr)
            return 1
        web = Principal.web(user.id)
        with transaction(runtime, web) as ctx:
            benchmark = lifecycle.create_benchmark(ctx, demo).benchmark
            run = launch.start_run(ctx, benchmark.id, local.id)
        worker = Worker(runtime)
        while worker.run_once():
            pass
        table = Table(title=f"SmolLM2-135M on {benchmark.title!r} ({benchmark.question_count} q)")
        for column in ("scoring", "accuracy", "correct"):
            table.add_column(column)
        for method in METHODS:
            with transaction(runtime, web) as ctx:
                result = rescoring.rescore_run(ctx, run.id, method, apply=False)
            summary = result.after
            table.add_row(
                json.dumps(method),
                f"{summary['accuracy']:.0%}",
                f"{summary['correct']}/{summary['n']}",
            )
        Console().print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
