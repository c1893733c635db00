"""Rescoring throughput end to end, database included (SQLite in a temporary folder).

What is measured: for each size (10k, 100k and 1M saved answers by default) and each scoring
method (exact for qa, choice for mcq), a fresh database gets a benchmark with that many questions
and a completed run with that many stored results. Then, as the benchmark's owner, inside
`services.runtime.transaction` (so the commit counts):

- dry run: `rescoring.rescore_run(ctx, run_id, settings, apply=False)`
- apply:   `rescoring.rescore_run(ctx, run_id, settings, apply=True)`

Both read every stored answer, score it again, and summarise; apply also writes the verdicts
that changed and stores the new summary. The stored verdicts are made stale on purpose
(`--changed`, default every answer), so apply rewrites that share of rows. While apply runs,
another thread of the same process commits a one-row write (a credit grant, as an API request
would) every 50 ms; the table shows the longest such write took, so a run that holds the write
lock for the whole apply shows up as a long wait (or a busy error after the 30 s busy timeout).

The fixture (benchmark, questions, run, results) is written with SQLAlchemy Core bulk inserts,
not through the services: benchmarks are limited to 10,000 questions by validation, and a bench
fixture may write tables directly. Only the two rescoring calls are timed. Each size × method is
measured in a fresh interpreter; with `--baseline-rev REV` the same measurement also runs on the
`src/` of that git revision (extracted with `git archive`, nothing in the checkout changes),
right before the current code's, and the table shows both rows and the speed-up. The wall time
is shown with the process's CPU time, which a busy machine disturbs less.

Run:

    .venv/bin/python bench/rescore.py
    .venv/bin/python bench/rescore.py --sizes 1000000 --baseline-rev cd465fa
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from baseline import baseline_src
from rich.console import Console
from rich.table import Table
from sqlalchemy import Connection, insert

from benchgen.core.config import Settings
from benchgen.core.context import Principal
from benchgen.core.errors import Unavailable
from benchgen.db.tables import Benchmark, Phase, PhaseTask, Question, Run, RunResult, Task
from benchgen.evals.scorers import registry
from benchgen.evals.types import Answer, Key
from benchgen.services.accounts import credits, users
from benchgen.services.runs import rescoring
from benchgen.services.runtime import Runtime, build_runtime, transaction

CHUNK = 20_000  # rows per executemany: bounded memory while building a million rows
METHODS = {"qa": "exact", "mcq": "choice"}
LABELS = "ABCD"
console = Console(width=None if sys.stdout.isatty() else 150)


@dataclass
class Fixture:
    """A database with one owner, one benchmark and one completed run of `size` answers."""

    runtime: Runtime
    owner: Principal
    run_id: str
    fmt: str


@dataclass
class Timing:
    """One size × format on one code: fixture build, dry run, apply, the probe's longest write."""

    label: str
    size: int
    fmt: str
    build_s: float
    dry_s: float
    dry_cpu: float
    apply_s: float
    apply_cpu: float
    changed: int
    accuracy: float | None
    rss_mib: float
    alone_rate: float
    write_wait_s: float


# ---------------------------------------------------------------- the fixture


def _question(fmt: str, i: int) -> dict[str, Any]:
    if fmt == "mcq":
        choices = [f"option {colour} {i}" for colour in ("red", "green", "blue", "amber")]
        return {"choices": choices, "answers": [LABELS[i % 4]]}
    return {"choices": None, "answers": [f"Answer {i}", f"answer-{i}"]}


def _reply(fmt: str, i: int) -> str:
    """Three of four replies are right; one in ten of the wrong ones gives no final answer."""
    right = i % 4 != 0
    if i % 40 == 0:
        return "I am not sure."
    if fmt == "mcq":
        letter = LABELS[i % 4] if right else LABELS[(i + 1) % 4]
        return f"Looking at the options.\nANSWER: {letter}"
    return f"Let me think.\nANSWER: {'Answer' if right else 'Guess'} {i}"


def _question_rows(benchmark_id: str, fmt: str, start: int, stop: int) -> list[dict[str, Any]]:
    return [
        {
            "id": f"q_{benchmark_id[-8:]}_{i}",
            "benchmark_id": benchmark_id,
            "position": i,
            "prompt": f"Question {i}: what is the answer?",
            "tags": [f"group{i % 5}"],
            "meta": {},
            **_question(fmt, i),
        }
        for i in range(start, stop)
    ]


def _key(fmt: str, i: int) -> Key:
    q = _question(fmt, i)
    return Key(tuple(q["answers"]), tuple(q["choices"]) if q["choices"] else None)


def _verdict(fmt: str, i: int, raw: str, stale: bool) -> dict[str, Any]:
    if stale:  # as if scored by other settings: apply rewrites these rows
        return {"extracted": None, "outcome": "wrong", "score": -1.0, "reasoning": None}
    answer = Answer(i, "", raw, None, 0, 0, 0, 1)
    scored = registry.score(answer, _key(fmt, i), registry.validate_scoring(fmt, {}))
    return {
        "extracted": scored.extracted,
        "outcome": scored.outcome,
        "score": scored.score,
        "reasoning": scored.reasoning,
    }


def scoring_alone_rate(fmt: str, size: int) -> float:
    """Answers/s of the scorer by itself (no database, no services), on up to 100k answers."""
    count = min(size, 100_000)
    settings = registry.validate_scoring(fmt, {})
    work = [(Answer(i, "", _reply(fmt, i), None, 0, 0, 0, 1), _key(fmt, i)) for i in range(count)]
    started = time.perf_counter()
    for answer, key in work:
        registry.score(answer, key, settings)
    return count / (time.perf_counter() - started)


def _result_rows(
    run_id: str, fmt: str, start: int, stop: int, changed: float
) -> list[dict[str, Any]]:
    stale_every = round(1 / changed) if changed > 0 else 0
    rows = []
    for i in range(start, stop):
        raw = _reply(fmt, i)
        stale = bool(stale_every) and i % stale_every == 0
        rows.append(
            {
                "run_id": run_id,
                "position": i,
                "prompt_sent": f"Question {i}: what is the answer?",
                "raw": raw,
                "error": None,
                "latency_ms": 50,
                "input_tokens": 60,
                "output_tokens": 6,
                "attempts": 1,
                "letter_logprobs": None,
                **_verdict(fmt, i, raw, stale),
            }
        )
    return rows


def _chunks(size: int) -> Iterator[tuple[int, int]]:
    for start in range(0, size, CHUNK):
        yield start, min(start + CHUNK, size)


def _insert_benchmark(conn: Connection, owner_id: str, fmt: str, size: int) -> tuple[str, str]:
    now = datetime.now(UTC)
    benchmark_id, phase_id, task_id = f"bm_bench{fmt}{size}", f"ph_bench{size}", f"tsk_bench{size}"
    conn.execute(
        insert(Benchmark),
        [
            {
                "id": benchmark_id,
                "owner_id": owner_id,
                "title": f"Rescore {fmt} {size}",
                "description": "",
                "format": fmt,
                "visibility": "private",
                "scoring": {},
                "created_door": "cli",
                "version": 1,
                "questions_frozen_at": now,
                "created_at": now,
                "updated_at": now,
            }
        ],
    )
    conn.execute(
        insert(Phase),
        [{"id": phase_id, "benchmark_id": benchmark_id, "name": "Main", "position": 0}],
    )
    conn.execute(
        insert(Task),
        [{"id": task_id, "benchmark_id": benchmark_id, "name": "Questions", "scoring": {}}],
    )
    conn.execute(insert(PhaseTask), [{"phase_id": phase_id, "task_id": task_id}])
    for start, stop in _chunks(size):
        conn.execute(insert(Question), _question_rows(benchmark_id, fmt, start, stop))
    return benchmark_id, phase_id


def _insert_run(
    conn: Connection, ids: tuple[str, str, str], fmt: str, size: int, changed: float
) -> str:
    owner_id, benchmark_id, phase_id = ids
    now = datetime.now(UTC)
    run_id = f"run_bench{fmt}{size}"
    conn.execute(
        insert(Run),
        [
            {
                "id": run_id,
                "benchmark_id": benchmark_id,
                "phase_id": phase_id,
                "model_id": "mdl_builtin_first",
                "launched_by": owner_id,
                "door": "cli",
                "status": "completed",
                "benchmark_version": 1,
                "scoring": registry.validate_scoring(fmt, {}),
                "question_count": size,
                "done_count": size,
                "estimated_cost": 0,
                "cost": 0,
                "summary": {},
                "scores": {},
                "created_at": now,
                "started_at": now,
                "finished_at": now,
            }
        ],
    )
    for start, stop in _chunks(size):
        conn.execute(insert(RunResult), _result_rows(run_id, fmt, start, stop, changed))
    return run_id


def build_fixture(data_dir: Path, fmt: str, size: int, changed: float) -> Fixture:
    """A fresh database with an owner (through the services) and the bulk-inserted run."""
    settings = Settings(
        data_dir=data_dir, worker_threads=0, argon2_time_cost=1, argon2_memory_kib=64
    )
    runtime = build_runtime(settings)
    with transaction(runtime, Principal.cli()) as ctx:
        owner_id = users.create_user(ctx, "owner@example.com", "password123").id
    with runtime.database.engine.begin() as conn:
        benchmark_id, phase_id = _insert_benchmark(conn, owner_id, fmt, size)
        run_id = _insert_run(conn, (owner_id, benchmark_id, phase_id), fmt, size, changed)
    return Fixture(runtime, Principal.web(owner_id), run_id, fmt)


# ---------------------------------------------------------------- the timed part


class WriteProbe:
    """`with WriteProbe(fixture):` commits a one-row write every 50 ms in another thread and
    keeps how long each took (a busy error counts as the time it waited)."""

    def __init__(self, fixture: Fixture) -> None:
        self.fixture = fixture
        self.waits: list[float] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._write, daemon=True)

    def __enter__(self) -> WriteProbe:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop.set()
        self.thread.join()

    def _write(self) -> None:
        owner = self.fixture.owner.user_id
        assert owner is not None
        while not self.stop.wait(0.05):
            started = time.perf_counter()
            try:
                with transaction(self.fixture.runtime, Principal.cli()) as ctx:
                    credits.grant_credits(ctx, owner, 1)
            except Unavailable:
                pass  # gave up after the busy timeout: the wait below says how long
            self.waits.append(time.perf_counter() - started)


def timed_rescore(fixture: Fixture, apply: bool) -> tuple[float, float, rescoring.Rescore]:
    """One rescoring call as the owner, transaction (and commit) included: wall and CPU s."""
    settings = {"method": METHODS[fixture.fmt]}
    started, cpu = time.perf_counter(), time.process_time()
    with transaction(fixture.runtime, fixture.owner) as ctx:
        result = rescoring.rescore_run(ctx, fixture.run_id, settings, apply=apply)
    return time.perf_counter() - started, time.process_time() - cpu, result


def rss_mib() -> float:
    """Peak resident memory of this process so far (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure(size: int, fmt: str, changed: float) -> Timing:
    """Build, dry-run, apply (with the write probe); progress goes to stderr."""
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        fixture = build_fixture(Path(tmp), fmt, size, changed)
        build_s = time.perf_counter() - started
        say(f"fixture built in {build_s:.1f} s; dry run …")
        dry_s, dry_cpu, dry = timed_rescore(fixture, apply=False)
        say(f"dry run {dry_s:.2f} s; apply …")
        with WriteProbe(fixture) as probe:
            apply_s, apply_cpu, applied = timed_rescore(fixture, apply=True)
        say(f"apply {apply_s:.2f} s ({applied.changed_count:,} changed)")
        fixture.runtime.close()
    assert dry.changed_count == applied.changed_count
    return Timing(
        label="",
        size=size,
        fmt=fmt,
        build_s=build_s,
        dry_s=dry_s,
        dry_cpu=dry_cpu,
        apply_s=apply_s,
        apply_cpu=apply_cpu,
        changed=applied.changed_count,
        accuracy=applied.after.get("accuracy"),
        rss_mib=rss_mib(),
        alone_rate=scoring_alone_rate(fmt, size),
        write_wait_s=max(probe.waits, default=0.0),
    )


def say(line: str) -> None:
    """Progress on stderr (stdout carries the child's result)."""
    print(f"    {line}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- one interpreter per measurement


def measure_in_child(size: int, fmt: str, changed: float, src: Path | None, label: str) -> Timing:
    """`measure` in a fresh interpreter, on `src` when given (else the installed code)."""
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = str(src)  # ahead of the editable install of the checkout
    command = [sys.executable, __file__, "--child", f"{size},{fmt},{changed}"]
    done = subprocess.run(  # noqa: S603 - this script, fixed arguments
        command, env=env, stdout=subprocess.PIPE, text=True, check=True
    )
    return Timing(**{**json.loads(done.stdout), "label": label})


COLUMNS = (
    "code",
    "answers",
    "method",
    "dry run s (CPU s)",
    "dry run answers/s",
    "apply s (CPU s)",
    "apply answers/s",
    "longest other write during apply ms",
    "rows rewritten",
    "accuracy",
    "scorer alone answers/s",
    "peak RSS MiB",
)


def _row(t: Timing) -> list[str]:
    accuracy = "—" if t.accuracy is None else f"{t.accuracy:.4f}"
    return [
        t.label,
        f"{t.size:,}",
        METHODS[t.fmt],
        f"{t.dry_s:.2f} ({t.dry_cpu:.2f})",
        f"{t.size / t.dry_s:,.0f}",
        f"{t.apply_s:.2f} ({t.apply_cpu:.2f})",
        f"{t.size / t.apply_s:,.0f}",
        f"{t.write_wait_s * 1000:,.0f}",
        f"{t.changed:,}",
        accuracy,
        f"{t.alone_rate:,.0f}",
        f"{t.rss_mib:,.0f}",
    ]


def print_table(timings: list[Timing]) -> None:
    """Rich table of every size × method (and code), then the speed-ups over the baseline."""
    table = Table(title="Rescoring saved answers (SQLite)")
    for column in COLUMNS:
        table.add_column(column, justify="right")
    for timing in timings:
        table.add_row(*_row(timing))
    console.print(table)
    before = {(t.size, t.fmt): t for t in timings if t.label == "before"}
    for t in timings:
        base = before.get((t.size, t.fmt))
        if t.label == "after" and base is not None:
            console.print(
                f"{METHODS[t.fmt]} {t.size:,}: dry run {base.dry_s / t.dry_s:.1f}× "
                f"(CPU {base.dry_cpu / t.dry_cpu:.1f}×), "
                f"apply {base.apply_s / t.apply_s:.1f}× (CPU {base.apply_cpu / t.apply_cpu:.1f}×)"
            )


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes",
        default="10000,100000,1000000",
        help="comma-separated answer counts (default 10000,100000,1000000)",
    )
    parser.add_argument("--formats", default="qa,mcq", help="qa, mcq or both (default both)")
    parser.add_argument(
        "--changed",
        type=float,
        default=1.0,
        help="share of stored verdicts made stale, 0..1 (default 1: all)",
    )
    parser.add_argument(
        "--baseline-rev",
        default="",
        help="also measure the src/ of this git revision (e.g. a commit before a change)",
    )
    parser.add_argument("--child", default="", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.child:
        size, fmt, changed = args.child.split(",")
        print(json.dumps(asdict(measure(int(size), fmt, float(changed)))))
        return
    sizes = [int(size) for size in args.sizes.split(",") if size.strip()]
    formats = [fmt.strip() for fmt in args.formats.split(",") if fmt.strip() in METHODS]
    timings = []
    with tempfile.TemporaryDirectory() as tmp:
        base = baseline_src(args.baseline_rev, Path(tmp)) if args.baseline_rev else None
        for size in sizes:
            for fmt in formats:
                sides = [("before", base)] if base else []
                for label, src in [*sides, ("after" if base else "current", None)]:
                    console.print(f"  {fmt} {size:,} ({label}):")
                    timings.append(measure_in_child(size, fmt, args.changed, src, label))
    print_table(timings)


if __name__ == "__main__":
    main()
