"""API load: requests/s, latency and server CPU per request of three endpoints of `benchgen serve`.

What is measured: `benchgen serve --workers N` (N server processes, each with its default embedded
job workers) on SQLite in a fresh temporary data folder, started as a subprocess on a free port
of 127.0.0.1 — this script never sends a request anywhere else. For each N the folder is seeded
through the operator CLI (`benchgen admin create-user`, `create-token`) and the public API (the
Python client): a qa benchmark of `--questions` questions with one completed run of the built-in
baseline `mdl_builtin_echo`, and a second, 5-question benchmark to launch runs on.

Then, one cell at a time, `--concurrency` client threads, each with its own keep-alive
connection, send, after a short warm-up:

- `GET /api/v1/benchmarks/{id}`            one benchmark (token check, access check, one row)
- `GET /api/v1/runs/{id}/results`          a page of 100 per-question results
- `POST /api/v1/runs`                      start a run (reserve credits, freeze, enqueue); the
                                           server's embedded workers then really run them, so
                                           this cell includes that background work

A cell ends after `--requests` requests or `--seconds` seconds, whichever comes first. The table
shows requests/s (completed requests over the cell's wall time), median and 99th-percentile
latency, the server's CPU time per completed request (every process of the server, its embedded
job workers' polling and runs included; read from /proc, so Linux only), and any non-2xx answers
or transport errors. With `--repeats R` each cell runs R times on the same server and the table
shows medians.

The load generator runs on the same machine as the server and shares its CPUs; on a machine with
few cores its own CPU counts against the server's. By default its threads speak HTTP/1.1 through
the standard library's `http.client` (a few tenths of a millisecond of CPU per request);
`--client httpx` uses one `httpx.Client` per thread instead, as the first version of this script
did (several milliseconds per request on a small machine, which then limited what was measured).
Its own CPU time is printed for each cell so that can be judged.

With `--baseline-rev REV` every cell also runs on a server started from the `src/` of git revision
REV (extracted to a temporary folder, the checkout untouched), with the same client, seed and
settings: the table then compares the two.

Run:

    .venv/bin/python bench/api_load.py                      # 1 and 2 processes, defaults
    .venv/bin/python bench/api_load.py --seconds 8 --repeats 3 --baseline-rev fc09864
    .venv/bin/python bench/api_load.py --workers 2 --targets benchmark,results --client httpx
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import httpx
from baseline import baseline_src, warm_bytecode
from rich.console import Console
from rich.table import Table

from benchgen.client import BenchGen

HOST = "127.0.0.1"  # loopback only, by design: no option changes it
CLI = (sys.executable, "-c", "from benchgen.cli import main; main()")
EMAIL = "load@example.com"
WARMUP = 30
START_TIMEOUT_S = 60
CURRENT = "current"
TRANSPORT_ERRORS = (OSError, http.client.HTTPException, httpx.HTTPError)
console = Console(width=None if sys.stdout.isatty() else 170)


@dataclass
class Cell:
    """What one endpoint did under load at one server size."""

    latencies: list[float] = field(default_factory=list)
    failures: int = 0
    wall_s: float = 0.0
    server_cpu_s: float = float("nan")
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

    def cpu_ms_per_request(self) -> float:
        """The server's CPU milliseconds per successful request."""
        return self.server_cpu_s * 1000 / self.count if self.count else float("nan")


@dataclass(frozen=True)
class Target:
    """One endpoint to load: a short name, a label, and the request to send."""

    name: str
    label: str
    method: str
    path: str
    body: bytes | None = None


# ---------------------------------------------------------------- the server under test


def free_port() -> int:
    """A TCP port on 127.0.0.1 nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        port: int = sock.getsockname()[1]
        return port


def server_env(
    data_dir: Path, src: Path | None, settings: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The environment of every CLI call: SQLite in `data_dir`, cheap password hashing, the
    code in `src` (a baseline) instead of the checkout's when given, and `settings` on top."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BENCHGEN_")}
    if src is not None:
        env["PYTHONPATH"] = str(src)  # ahead of the editable install of the checkout
    return env | {
        "BENCHGEN_DATA_DIR": str(data_dir),
        "BENCHGEN_ARGON2_TIME_COST": "1",
        "BENCHGEN_ARGON2_MEMORY_KIB": "64",
        **(settings or {}),
    }


def cli(data_dir: Path, src: Path | None, *args: str) -> str:
    """Run one `benchgen` command against `data_dir`; its stdout."""
    done = subprocess.run(  # noqa: S603 - our own interpreter and CLI, fixed arguments
        [*CLI, *args], env=server_env(data_dir, src), capture_output=True, text=True, check=False
    )
    if done.returncode:
        raise SystemExit(f"benchgen {' '.join(args[:2])} failed:\n{done.stderr}{done.stdout}")
    return done.stdout


@dataclass(frozen=True)
class Server:
    """A running `benchgen serve`: its URL and its process group (for its CPU time)."""

    url: str
    group: int


@contextmanager
def serve(
    data_dir: Path, processes: int, src: Path | None, settings: Mapping[str, str] | None = None
) -> Iterator[Server]:
    """`benchgen serve --workers N` (with `settings` in its environment) on a free loopback
    port, from its first healthy answer until the block ends."""
    port = free_port()
    log_path = data_dir / f"serve-{processes}.log"
    with log_path.open("w") as log:
        proc = subprocess.Popen(  # noqa: S603 - our own interpreter and CLI, fixed arguments
            [*CLI, "serve", "--host", HOST, "--port", str(port), "--workers", str(processes)],
            env=server_env(data_dir, src, settings),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    url = f"http://{HOST}:{port}"
    try:
        _wait_until_healthy(url, proc, log_path)
        yield Server(url, proc.pid)
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
        time.sleep(0.02)  # bench/server_start.py times the start-up by this wait
    raise SystemExit(f"benchgen serve did not answer in {START_TIMEOUT_S} s")


def group_cpu_s(group: int) -> float:
    """User and system CPU seconds of every live process in process group `group` (the server
    started its own session, so that is the server and its worker processes); NaN off Linux."""
    proc = Path("/proc")
    if not proc.is_dir():
        return float("nan")
    ticks = 0
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # ended meanwhile
        if int(fields[2]) == group:  # fields from the state on: pgrp is the third
            ticks += int(fields[11]) + int(fields[12])  # utime, stime
    return ticks / os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Seeded:
    """What the load needs: a token, a benchmark to read, a finished run, one to launch on."""

    token: str
    read_benchmark: str
    run_id: str
    launch_benchmark: str


def seed(data_dir: Path, src: Path | None, url: str, questions: int) -> Seeded:
    """A user and token through the operator CLI, the rest through the public API."""
    admin = ("admin", "create-user", "--email", EMAIL, "--password", "load-test-password")
    cli(data_dir, src, *admin)
    token = cli(
        data_dir,
        src,
        *("admin", "create-token", "--email", EMAIL, "--scopes", "read,runs,create"),
        *("--expires-days", "1"),
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


def targets(seeded: Seeded, names: list[str]) -> list[Target]:
    """The chosen endpoints, in the order they run (the writing one last)."""
    body = {"benchmark_id": seeded.launch_benchmark, "model_id": "mdl_builtin_echo"}
    every = [
        Target(
            "benchmark",
            "GET /benchmarks/{id}",
            "GET",
            f"/api/v1/benchmarks/{seeded.read_benchmark}",
        ),
        Target("results", "GET /runs/{id}/results", "GET", f"/api/v1/runs/{seeded.run_id}/results"),
        Target("launch", "POST /runs", "POST", "/api/v1/runs", json.dumps(body).encode()),
    ]
    return [target for target in every if target.name in names]


# ---------------------------------------------------------------- the clients


class RawSender:
    """One keep-alive HTTP/1.1 connection through `http.client`: the leanest client the standard
    library has, so the load generator's CPU takes as little as it can from the server's."""

    def __init__(self, url: str, token: str) -> None:
        parts = urlsplit(url)
        self._address = (parts.hostname or HOST, parts.port or 80)
        self._headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        self._connection = http.client.HTTPConnection(*self._address, timeout=60)

    def send(self, target: Target) -> tuple[int, str]:
        """Send `target`'s request; (status, the start of the body)."""
        try:
            self._connection.request(target.method, target.path, target.body, self._headers)
            response = self._connection.getresponse()
            return response.status, response.read()[:200].decode(errors="replace")
        except TRANSPORT_ERRORS:
            self._connection.close()  # the next request opens a new connection
            raise

    def close(self) -> None:
        """Close the connection."""
        self._connection.close()


class HttpxSender:
    """One `httpx.Client` (the first version's client, kept to compare)."""

    def __init__(self, url: str, token: str) -> None:
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        self._client = httpx.Client(base_url=url, headers=headers, timeout=60)

    def send(self, target: Target) -> tuple[int, str]:
        """Send `target`'s request; (status, the start of the body)."""
        response = self._client.request(target.method, target.path, content=target.body)
        return response.status_code, response.text[:200]

    def close(self) -> None:
        """Close the client."""
        self._client.close()


Sender = RawSender | HttpxSender
CLIENTS: dict[str, Callable[[str, str], Sender]] = {"raw": RawSender, "httpx": HttpxSender}


# ---------------------------------------------------------------- the load


@dataclass(frozen=True)
class Load:
    """How hard to push one cell."""

    client: str
    requests: int
    seconds: float
    concurrency: int


def load(server: Server, token: str, target: Target, how: Load) -> Cell:
    """Send up to `how.requests` requests (or for `how.seconds`) from `how.concurrency` threads."""
    cell = Cell()
    lock = threading.Lock()
    tickets = iter(range(how.requests))
    senders = [CLIENTS[how.client](server.url, token) for _ in range(how.concurrency)]
    for _ in range(WARMUP):
        senders[0].send(target)
    deadline = time.monotonic() + how.seconds

    def worker(sender: Sender) -> None:
        while time.monotonic() < deadline:
            with lock:
                if next(tickets, None) is None:
                    return
            began = time.perf_counter()
            try:
                status, text = sender.send(target)
                ok, why = 200 <= status < 300, f"{status} {text}"
            except TRANSPORT_ERRORS as exc:
                ok, why = False, f"{type(exc).__name__}: {exc}"
            took = time.perf_counter() - began
            with lock:
                if ok:
                    cell.latencies.append(took)
                else:
                    cell.failures += 1
                    cell.first_failure = cell.first_failure or why

    threads = [threading.Thread(target=worker, args=(sender,)) for sender in senders]
    cpu_before, began = group_cpu_s(server.group), time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    cell.wall_s = time.perf_counter() - began
    cell.server_cpu_s = group_cpu_s(server.group) - cpu_before
    for sender in senders:
        sender.close()
    return cell


Results = dict[tuple[str, int], dict[str, list[Cell]]]


def measure(args: argparse.Namespace, codes: dict[str, Path | None]) -> Results:
    """Every cell: for each code and server size, a fresh data folder, a seed, then each
    endpoint `--repeats` times."""
    how = Load(args.client, args.requests, args.seconds, args.concurrency)
    results: Results = {}
    for processes in args.workers:
        for code, src in codes.items():
            with tempfile.TemporaryDirectory(prefix="benchgen-load-") as folder:
                data_dir = Path(folder)
                with serve(data_dir, processes, src) as server:
                    seeded = seed(data_dir, src, server.url, args.questions)
                    console.print(f"[bold]{code}, --workers {processes}[/]: {server.url}, seeded")
                    results[(code, processes)] = run_cells(server, seeded, args, how)
    return results


def run_cells(
    server: Server, seeded: Seeded, args: argparse.Namespace, how: Load
) -> dict[str, list[Cell]]:
    """Each chosen endpoint `--repeats` times on one seeded server."""
    cells: dict[str, list[Cell]] = {}
    for target in targets(seeded, args.targets):
        for _ in range(args.repeats):
            own_before = _own_cpu_s()
            cell = load(server, seeded.token, target, how)
            cells.setdefault(target.label, []).append(cell)
            console.print(
                f"  {target.label:<24} {cell.count:>6} ok, {cell.failures} failed in "
                f"{cell.wall_s:5.1f} s; server CPU {cell.server_cpu_s:5.1f} s, load generator "
                f"CPU {_own_cpu_s() - own_before:5.1f} s"
                + (f"  first failure: {cell.first_failure}" if cell.failures else "")
            )
    return cells


def _own_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def render(results: Results, args: argparse.Namespace) -> Table:
    """Code and endpoint down, server sizes across: medians of req/s, p50 and p99 latency and
    server CPU per request, and the failures of every repeat together."""
    table = Table(
        title=f"benchgen serve on SQLite, 127.0.0.1 · {args.concurrency} client threads "
        f"({args.client}) · ≤{args.requests:,} requests or ≤{args.seconds:g} s per cell · "
        f"median of {args.repeats} · {os.cpu_count()} CPUs",
    )
    table.add_column("code")
    table.add_column("endpoint")
    for processes in args.workers:
        for name in ("req/s", "p50 ms", "p99 ms", "CPU ms/req", "fail"):
            table.add_column(f"{processes}w {name}", justify="right")
    codes = list(dict.fromkeys(code for code, _ in results))
    for code in codes:
        labels = results[(code, args.workers[0])].keys()
        for label in labels:
            row = [code, label]
            for processes in args.workers:
                row += _summary(results[(code, processes)][label])
            table.add_row(*row)
    return table


def _summary(cells: list[Cell]) -> list[str]:
    def median(value: Callable[[Cell], float]) -> float:
        return statistics.median(value(cell) for cell in cells)

    return [
        f"{median(Cell.rate):,.0f}",
        f"{median(lambda c: c.percentile(0.50)):.1f}",
        f"{median(lambda c: c.percentile(0.99)):.1f}",
        f"{median(Cell.cpu_ms_per_request):.2f}",
        str(sum(cell.failures for cell in cells)),
    ]


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
    parser.add_argument(
        "--targets",
        type=lambda text: [part.strip() for part in text.split(",")],
        default=["benchmark", "results", "launch"],
        help="endpoints to load, comma-separated (default: benchmark,results,launch)",
    )
    parser.add_argument(
        "--client", choices=sorted(CLIENTS), default="raw", help="load generator (default: raw)"
    )
    parser.add_argument("--repeats", type=int, default=1, help="runs of each cell (default: 1)")
    parser.add_argument(
        "--baseline-rev", help="also measure the src/ of this git revision, to compare"
    )
    args = parser.parse_args(argv)
    if not all(1 <= n <= 16 for n in args.workers):
        parser.error("--workers: each count must be 1..16")
    if not (1 <= args.requests <= 1_000_000 and 0 < args.seconds <= 600):
        parser.error("--requests must be 1..1,000,000 and --seconds 0..600")
    if not 1 <= args.concurrency <= 256 or not 1 <= args.questions <= 10_000:
        parser.error("--concurrency must be 1..256 and --questions 1..10,000")
    if not args.targets or set(args.targets) - {"benchmark", "results", "launch"}:
        parser.error("--targets: choose among benchmark, results, launch")
    if not 1 <= args.repeats <= 20:
        parser.error("--repeats must be 1..20")
    return args


def main(argv: list[str] | None = None) -> None:
    """Measure every cell and print the table."""
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="benchgen-base-") as tmp:
        codes: dict[str, Path | None] = {CURRENT: None}
        if args.baseline_rev:
            codes[args.baseline_rev] = baseline_src(args.baseline_rev, Path(tmp))
        for src in codes.values():
            warm_bytecode(src)
        results = measure(args, codes)
    console.print(render(results, args))


if __name__ == "__main__":
    main()
