"""API load: requests/s and latency of three endpoints of `benchgen serve` at 1 and 2 processes.

What is measured: `benchgen serve --workers N` (N server processes, each with its default embedded
job workers) on SQLite in a fresh temporary data folder, started as a subprocess on a free port
of 127.0.0.1 — this script never sends a request anywhere else. For each N the folder is seeded
through the operator CLI (`benchgen admin create-user`, `create-token`) and the public API (the
Python client): a qa benchmark of `--questions` questions with one completed run of the built-in
baseline `mdl_builtin_echo`, and a second, 5-question benchmark to launch runs on.

Then, one cell at a time, `--concurrency` client threads (each with its own keep-alive
`httpx.Client`) send, after a short warm-up:

- `GET /api/v1/benchmarks/{id}`            one benchmark (token check, access check, one row)
- `GET /api/v1/runs/{id}/results`          a page of 100 per-question results
- `POST /api/v1/runs`                      start a run (reserve credits, freeze, enqueue); the
                                           server's embedded workers then really run them, so
                                           this cell includes that background work

A cell ends after `--requests` requests or `--seconds` seconds, whichever comes first. The table
shows requests/s (completed requests over the cell's wall time), median and 99th-percentile
latency, and any non-2xx answers or transport errors. The load generator runs on the same
machine as the server and shares its CPUs; on a machine with few cores it can be the bottleneck
(its own CPU time is printed so that can be judged).

Run:

    .venv/bin/python bench/api_load.py                      # 1 and 2 processes, defaults
    .venv/bin/python bench/api_load.py --requests 500 --seconds 5 --concurrency 4
"""

from __future__ import annotations

import argparse
import os
import resource
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from rich.console import Console
from rich.table import Table

from benchgen.client import BenchGen

HOST = "127.0.0.1"  # loopback only, by design: no option changes it
CLI = (sys.executable, "-c", "from benchgen.cli import main; main()")
EMAIL = "load@example.com"
WARMUP = 30
START_TIMEOUT_S = 60
console = Console(width=None if sys.stdout.isatty() else 150)


@dataclass
class Cell:
    """What one endpoint did under load at one server size."""

    latencies: list[float] = field(default_factory=list)
    failures: int = 0
    wall_s: float = 0.0
    first_failure: str = ""

    @property
    def count(self) -> int:
        """Requests answered with a 2xx."""
        return len(self.latencies)

    def rate(self) -> float:
        """Successful requests per second of wall time."""
        return self.count / self.wall_s if self.wall_s else 0.0

    def percentile(self, q: float) -> float:
        """Latency in milliseconds at quantile `q` (nearest rank)."""
        if not self.latencies:
            return float("nan")
        ordered = sorted(self.latencies)
        rank = min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))
        return ordered[rank] * 1000


@dataclass(frozen=True)
class Target:
    """One endpoint to load: a label and how to send one request with a client."""

    label: str
    send: Callable[[httpx.Client], httpx.Response]


# ---------------------------------------------------------------- the server under test


def free_port() -> int:
    """A TCP port on 127.0.0.1 nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        port: int = sock.getsockname()[1]
        return port


def server_env(data_dir: Path) -> dict[str, str]:
    """The environment of every CLI call: SQLite in `data_dir`, cheap password hashing."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BENCHGEN_")}
    env |= {
        "BENCHGEN_DATA_DIR": str(data_dir),
        "BENCHGEN_ARGON2_TIME_COST": "1",
        "BENCHGEN_ARGON2_MEMORY_KIB": "64",
    }
    return env


def cli(data_dir: Path, *args: str) -> str:
    """Run one `benchgen` command against `data_dir`; its stdout."""
    done = subprocess.run(  # noqa: S603 - our own interpreter and CLI, fixed arguments
        [*CLI, *args], env=server_env(data_dir), capture_output=True, text=True, check=False
    )
    if done.returncode:
        raise SystemExit(f"benchgen {' '.join(args[:2])} failed:\n{done.stderr}{done.stdout}")
    return done.stdout


@contextmanager
def serve(data_dir: Path, processes: int) -> Iterator[str]:
    """`benchgen serve --workers N` on a free loopback port until the block ends."""
    port = free_port()
    log_path = data_dir / f"serve-{processes}.log"
    with log_path.open("w") as log:
        proc = subprocess.Popen(  # noqa: S603 - our own interpreter and CLI, fixed arguments
            [*CLI, "serve", "--host", HOST, "--port", str(port), "--workers", str(processes)],
            env=server_env(data_dir),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    url = f"http://{HOST}:{port}"
    try:
        _wait_until_healthy(url, proc, log_path)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)  # the group of the server we started, and only that
            proc.wait()


def _wait_until_healthy(url: str, proc: subprocess.Popen[bytes], log_path: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"benchgen serve exited:\n{log_path.read_text()[-2000:]}")
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise SystemExit(f"benchgen serve did not answer in {START_TIMEOUT_S} s")


@dataclass(frozen=True)
class Seeded:
    """What the load needs: a token, a benchmark to read, a finished run, one to launch on."""

    token: str
    read_benchmark: str
    run_id: str
    launch_benchmark: str


def seed(data_dir: Path, url: str, questions: int) -> Seeded:
    """A user and token through the operator CLI, the rest through the public API."""
    cli(data_dir, "admin", "create-user", "--email", EMAIL, "--password", "load-test-password")
    token = cli(
        data_dir,
        "admin",
        "create-token",
        "--email",
        EMAIL,
        "--scopes",
        "read,runs,create",
        "--expires-days",
        "1",
    ).strip()
    qs = [{"prompt": f"What is {i} + {i}?", "answer": str(2 * i)} for i in range(questions)]
    with BenchGen(url, token, timeout=60) as bg:
        read = bg.create_benchmark("Load: read", "qa", qs)["benchmark"]["id"]
        launch = bg.create_benchmark("Load: launch", "qa", qs[:5])["benchmark"]["id"]
        run = bg.start_run(read, "mdl_builtin_echo")
        done = bg.wait_for_run(run["id"], timeout_s=120, poll_s=0.2)
        if done["status"] != "completed":
            raise SystemExit(f"the seeding run ended {done['status']}: {done['error']}")
    return Seeded(token, read, run["id"], launch)


def targets(seeded: Seeded) -> list[Target]:
    """The three endpoints, in the order they run (the writing one last)."""
    body = {"benchmark_id": seeded.launch_benchmark, "model_id": "mdl_builtin_echo"}
    return [
        Target(
            "GET /benchmarks/{id}",
            lambda c: c.get(f"/api/v1/benchmarks/{seeded.read_benchmark}"),
        ),
        Target(
            "GET /runs/{id}/results",
            lambda c: c.get(f"/api/v1/runs/{seeded.run_id}/results"),
        ),
        Target("POST /runs", lambda c: c.post("/api/v1/runs", json=body)),
    ]


# ---------------------------------------------------------------- the load


def load(
    url: str, token: str, target: Target, requests: int, seconds: float, concurrency: int
) -> Cell:
    """Send up to `requests` requests (or for `seconds`) from `concurrency` threads."""
    cell = Cell()
    lock = threading.Lock()
    tickets = iter(range(requests))
    headers = {"Authorization": f"Bearer {token}"}
    clients = [httpx.Client(base_url=url, headers=headers, timeout=60) for _ in range(concurrency)]
    for client in clients[:1]:
        for _ in range(WARMUP):
            target.send(client)
    deadline = time.monotonic() + seconds

    def worker(client: httpx.Client) -> None:
        while time.monotonic() < deadline:
            with lock:
                if next(tickets, None) is None:
                    return
            began = time.perf_counter()
            try:
                response = target.send(client)
                ok, why = response.is_success, f"{response.status_code} {response.text[:200]}"
            except httpx.HTTPError as exc:
                ok, why = False, f"{type(exc).__name__}: {exc}"
            took = time.perf_counter() - began
            with lock:
                if ok:
                    cell.latencies.append(took)
                else:
                    cell.failures += 1
                    cell.first_failure = cell.first_failure or why

    threads = [threading.Thread(target=worker, args=(client,)) for client in clients]
    began = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    cell.wall_s = time.perf_counter() - began
    for client in clients:
        client.close()
    return cell


def measure(args: argparse.Namespace) -> dict[int, dict[str, Cell]]:
    """Every cell: for each server size, a fresh data folder, a seed, then each endpoint."""
    results: dict[int, dict[str, Cell]] = {}
    for processes in args.workers:
        with tempfile.TemporaryDirectory(prefix="benchgen-load-") as folder:
            data_dir = Path(folder)
            with serve(data_dir, processes) as url:
                seeded = seed(data_dir, url, args.questions)
                console.print(f"[bold]--workers {processes}[/]: serving {url}, seeded")
                results[processes] = {}
                for target in targets(seeded):
                    cpu_before = _own_cpu_s()
                    cell = load(
                        url,
                        seeded.token,
                        target,
                        args.requests,
                        args.seconds,
                        args.concurrency,
                    )
                    results[processes][target.label] = cell
                    console.print(
                        f"  {target.label:<24} {cell.count:>6} ok, {cell.failures} failed in "
                        f"{cell.wall_s:5.1f} s; load generator CPU "
                        f"{_own_cpu_s() - cpu_before:5.1f} s"
                        + (f"  first failure: {cell.first_failure}" if cell.failures else "")
                    )
    return results


def _own_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def render(results: dict[int, dict[str, Cell]], args: argparse.Namespace) -> Table:
    """Endpoints down, server sizes across: req/s, p50 and p99 latency, failures."""
    table = Table(
        title=f"benchgen serve on SQLite, 127.0.0.1 · {args.concurrency} client threads · "
        f"≤{args.requests:,} requests or ≤{args.seconds:g} s per cell · {os.cpu_count()} CPUs",
    )
    table.add_column("endpoint")
    for processes in results:
        for name in ("req/s", "p50 ms", "p99 ms", "fail"):
            table.add_column(f"{processes}w {name}", justify="right")
    labels = next(iter(results.values())).keys() if results else []
    for label in labels:
        cells: list[str] = []
        for per_size in results.values():
            cell = per_size[label]
            cells += [
                f"{cell.rate():,.0f}",
                f"{cell.percentile(0.50):.1f}",
                f"{cell.percentile(0.99):.1f}",
                str(cell.failures),
            ]
        table.add_row(label, *cells)
    return table


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(
        description=(__doc__ or "").split("\n\n")[0],
        epilog="Only ever talks to a server it starts itself on 127.0.0.1.",
    )
    parser.add_argument(
        "--workers",
        type=lambda text: [int(part) for part in text.split(",")],
        default=[1, 2],
        help="server process counts to compare, comma-separated (default: 1,2)",
    )
    parser.add_argument(
        "--requests", type=int, default=2000, help="most requests per cell (default: 2000)"
    )
    parser.add_argument(
        "--seconds", type=float, default=20, help="most seconds per cell (default: 20)"
    )
    parser.add_argument("--concurrency", type=int, default=8, help="client threads (default: 8)")
    parser.add_argument(
        "--questions",
        type=int,
        default=100,
        help="questions in the read benchmark; results return one page of up to 100 (default: 100)",
    )
    args = parser.parse_args(argv)
    if not all(1 <= n <= 16 for n in args.workers):
        parser.error("--workers: each count must be 1..16")
    if not (1 <= args.requests <= 1_000_000 and 0 < args.seconds <= 600):
        parser.error("--requests must be 1..1,000,000 and --seconds 0..600")
    if not 1 <= args.concurrency <= 256 or not 1 <= args.questions <= 10_000:
        parser.error("--concurrency must be 1..256 and --questions 1..10,000")
    return args


def main(argv: list[str] | None = None) -> None:
    """Measure every cell and print the table."""
    args = parse_args(argv)
    results = measure(args)
    console.print(render(results, args))


if __name__ == "__main__":
    main()
