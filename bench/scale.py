"""Scale-out throughput: embedded workers against Celery with 1, 2 and 4 worker processes.

What is measured: 50 small runs (20 multiple-choice questions each) from 5 users, posted over
HTTP to `benchgen serve` at once, against the stub endpoint of bench/run_throughput.py (its own
process, fixed latency, default 500 ms). Timed from the first POST to the last run's
`finished_at`. Every mode uses a fresh PostgreSQL database on 127.0.0.1 (so several processes
share it as a team's deployment would):

- embedded: `benchgen serve` alone, with its two embedded worker threads;
- celery ×N: `benchgen serve` publishing to Redis (db 10), and N `benchgen worker --threads 2`
  processes consuming.

A worker thread holds one run at a time and each run keeps at most `--run-concurrency`
questions in flight (BENCHGEN_RUN_CONCURRENCY; 4 here, as for an endpoint that limits a key's
concurrent requests), so one worker process answers at most threads × concurrency / latency
questions a second: the model's latency, not the CPU, bounds it, as with hosted models. Adding
worker processes adds that capacity until the CPUs or the database are the limit. The table
prints each mode's ceiling beside what it reached, and the ratio to the embedded mode.
With `--latency-ms 50 --run-concurrency 16` the same script shows the CPU-bound case instead:
on a 2-core machine more processes then only compete for the same cores.

    .venv/bin/python bench/scale.py [--runs 50] [--questions 20] [--latency-ms 500]
                                    [--run-concurrency 4]
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import psycopg
from run_throughput import StubProcess, make_questions

BIN = Path(sys.executable).parent / "benchgen"
ADMIN = os.environ.get("BENCHGEN_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres")
BROKER = "redis://127.0.0.1:6379/10"
USERS = 5
THREADS = 2  # worker threads per process, embedded or Celery


def fresh_database(name: str) -> str:
    """An empty PostgreSQL database `name`; its SQLAlchemy URL."""
    with psycopg.connect(ADMIN, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    return ADMIN.rsplit("/", 1)[0].replace("postgresql://", "postgresql+psycopg://") + f"/{name}"


def setup(env: dict[str, str], stub_url: str, questions: int) -> list[tuple[str, str, str]]:
    """Users with tokens and benchmarks, the stub as a platform model: [(token, bm, model)]."""
    from benchgen.core.config import Settings
    from benchgen.core.context import Principal
    from benchgen.services import models
    from benchgen.services.accounts import credits, tokens, users
    from benchgen.services.benchmarks import lifecycle
    from benchgen.services.runtime import build_runtime, transaction

    settings = Settings(
        data_dir=Path(env["BENCHGEN_DATA_DIR"]),
        database_url=env["BENCHGEN_DATABASE_URL"],
        model_host_allowlist="127.0.0.1",
        argon2_time_cost=1,
        argon2_memory_kib=64,
    )
    runtime = build_runtime(settings)
    made = []
    try:
        with transaction(runtime, Principal.cli()) as ctx:
            spec = {"name": "stub", "endpoint_model": "stub", "base_url": stub_url}
            model = models.create_platform_model(ctx, spec).id
            people = [
                users.create_user(ctx, f"u{n}@example.com", "password123").id for n in range(USERS)
            ]
            for person in people:
                credits.grant_credits(ctx, person, 10**6)
        bench = {"title": "Scale", "format": "mcq", "questions": make_questions(questions)}
        for person in people:
            with transaction(runtime, Principal.web(person)) as ctx:
                bm = lifecycle.create_benchmark(ctx, bench).benchmark.id
                token = tokens.create_token(ctx, "scale", ["read", "runs"]).secret
            made.append((token, bm, model))
    finally:
        runtime.close()
    return made


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_healthy(url: str) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            time.sleep(0.2)
    raise RuntimeError("benchgen serve did not start")


def measure(mode: str, workers: int, args: argparse.Namespace, stub_url: str) -> dict[str, Any]:
    """One mode: processes up, `args.runs` runs posted at once, timed to the last finish."""
    with tempfile.TemporaryDirectory(prefix="benchgen-scale-") as data:
        env = {k: v for k, v in os.environ.items() if not k.startswith("BENCHGEN_")} | {
            "BENCHGEN_DATA_DIR": data,
            "BENCHGEN_DATABASE_URL": fresh_database(f"benchgen_scale_{mode}_{workers}"),
            "BENCHGEN_MODEL_HOST_ALLOWLIST": "127.0.0.1",
            "BENCHGEN_USER_RUN_SLOTS": "4",
            "BENCHGEN_RUN_CONCURRENCY": str(args.run_concurrency),
            "BENCHGEN_WORKER_THREADS": str(THREADS),
        }
        people = setup(env, stub_url, args.questions)
        if mode == "celery":
            env["BENCHGEN_BROKER_URL"] = BROKER
            import redis

            redis.Redis.from_url(BROKER).flushdb()
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        processes = [subprocess.Popen([str(BIN), "serve", "--port", str(port)], env=env)]  # noqa: S603
        for _ in range(workers if mode == "celery" else 0):
            command = [str(BIN), "worker", "--threads", str(THREADS)]
            processes.append(subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL))  # noqa: S603
        try:
            wait_healthy(url)
            time.sleep(3)  # the workers connect to the broker
            return timed_runs(url, people, args.runs, args.questions)
        finally:
            for process in processes:
                process.terminate()
            for process in processes:
                process.wait(30)


def timed_runs(
    url: str, people: list[tuple[str, str, str]], runs: int, questions: int
) -> dict[str, Any]:
    def post(n: int) -> tuple[str, str]:
        token, bm, model = people[n % len(people)]
        headers = {"Authorization": f"Bearer {token}"}
        body = {"benchmark_id": bm, "model_id": model}
        answer = httpx.post(f"{url}/api/v1/runs", json=body, headers=headers, timeout=60)
        answer.raise_for_status()
        return token, answer.json()["id"]

    started = time.time()
    with ThreadPoolExecutor(8) as pool:
        posted = list(pool.map(post, range(runs)))
    finished = [wait_run(url, token, run_id) for token, run_id in posted]
    elapsed = max(finished) - started
    return {"runs_per_min": runs / elapsed * 60, "q_per_s": runs * questions / elapsed}


def wait_run(url: str, token: str, run_id: str) -> float:
    headers = {"Authorization": f"Bearer {token}"}
    while True:
        run = httpx.get(f"{url}/api/v1/runs/{run_id}", headers=headers, timeout=30).json()
        if run["status"] in ("completed", "failed", "cancelled"):
            assert run["status"] == "completed", run
            return datetime.fromisoformat(run["finished_at"]).timestamp()
        time.sleep(0.2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--questions", type=int, default=20)
    parser.add_argument("--latency-ms", type=float, default=500)
    parser.add_argument("--run-concurrency", type=int, default=4)
    args = parser.parse_args()
    rows = []
    with StubProcess(args.latency_ms / 1000) as stub:
        for mode, workers in (("embedded", 0), ("celery", 1), ("celery", 2), ("celery", 4)):
            result = measure(mode, workers, args, stub.base_url)
            rows.append((mode if mode == "embedded" else f"celery ×{workers}", result))
            print(f"{rows[-1][0]}: {result}", file=sys.stderr)
    base = rows[0][1]["q_per_s"]
    print(
        f"\n{args.runs} runs × {args.questions} questions, {USERS} users, "
        f"stub {args.latency_ms:g} ms, {args.run_concurrency} in flight per run, "
        f"{THREADS} threads per worker"
    )
    print(f"{'mode':<12} {'ceiling q/s':>11} {'runs/min':>9} {'q/s':>8} {'× embedded':>11}")
    for name, result in rows:
        processes = 1 if name == "embedded" else int(name.split("×")[1])
        ceiling = processes * THREADS * args.run_concurrency / (args.latency_ms / 1000)
        ratio = result["q_per_s"] / base
        print(
            f"{name:<12} {ceiling:>11.1f} {result['runs_per_min']:>9.1f} "
            f"{result['q_per_s']:>8.1f} {ratio:>11.2f}"
        )


if __name__ == "__main__":
    main()
