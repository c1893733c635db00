"""Run throughput: BenchGen's run engine against a bare HTTP client, Inspect AI and
lm-evaluation-harness.

What is measured: the same generated multiple-choice benchmark (1,000 questions, 4 choices each,
a known answer key) is run by each harness against the same OpenAI-compatible stub endpoint on
127.0.0.1 (a separate process; fixed 50 ms latency; every harness allowed 16 requests in flight).
The stub answers `ANSWER: X` with X chosen from a hash of the *choice texts*, so every harness gets
the same replies and must report the same accuracy; the key is built so that it is exactly 75%.

- bare client (ceiling): 16 threads, each with one keep-alive `http.client` connection, ask every
  question once and check the letter. No harness does less, so the table shows every other row
  as a share of it ("× bare client").
- BenchGen: a fresh SQLite database in a temporary folder, set up through the services (operator
  creates a user, the user creates the benchmark, the operator registers the stub as a platform
  model); one embedded worker thread (`start_workers(runtime, 1)`). Timed from the `start_run`
  call to the run's status `completed` (polling `get_run` every 20 ms), so the job queue, the
  database writes and scoring are included.
- BenchGen over HTTP: `benchgen serve` (its default two embedded workers) on a data folder set up
  the same way, started before the first run and kept up. Timed from `POST /api/v1/runs` to the
  run's `finished_at` (one clock on this machine; the client polls every 0.25 s, so polling
  neither delays the end nor costs the server much). "server CPU ms/question" is the serving
  process's user and system CPU time over that window (all its threads), per question.
- benchgen run (CLI): `benchgen run --benchmark … --model … --as …` on a prepared data folder,
  timed from process start to exit, as a person at a shell sees it. "first model request s" is
  when the stub saw its first request after the harness's timing began (the start-up cost);
  "CPU s to first request" is the CPU time the `benchgen` process had spent by then (sampled
  from /proc every 5 ms), which a busy machine inflates less than the wall time.
  Bytecode caches are written first for every code measured, as an installed package has them.
- With `--baseline-rev REV`, the HTTP and CLI rows run a second time on the `src/` of that git
  revision (extracted with `git archive`; the checkout is untouched), interleaved with the current
  code's: before and after in one run, on one machine, under the same load.
- Inspect AI and lm-evaluation-harness: run as subprocesses from their own virtual environment
  (bench/.peers-venv, never the project's), timed from process start to exit, so their start-up
  counts, as a person running them would see it. Accuracy is read from their logs and results.

Each harness runs N times, interleaved (this machine is noisy); the table shows medians. "While
sending" is questions divided by the time between the stub's first and last request.

Run (the first time creates the peers' virtual environment; later runs reuse it):

    .venv/bin/python bench/run_throughput.py --setup-peers
    .venv/bin/python bench/run_throughput.py --repeats 5
    .venv/bin/python bench/run_throughput.py --no-peers --baseline-rev cd465fa
    .venv/bin/python bench/run_throughput.py --no-peers --only cli --repeats 9 --baseline-rev HEAD

Without the peers' environment the peers are skipped with a hint and BenchGen's row still prints.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import http.client
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from pathlib import Path
from subprocess import PIPE, STDOUT, CompletedProcess
from typing import TYPE_CHECKING, Any

import httpx
from baseline import baseline_src, warm_bytecode
from rich.console import Console
from rich.table import Table

if TYPE_CHECKING:
    from benchgen.core.context import Principal
    from benchgen.services.runs.launch import RunView
    from benchgen.services.runtime import Runtime

HERE = Path(__file__).resolve().parent
PEERS_VENV = HERE / ".peers-venv"
PEER_PACKAGES = (
    "inspect-ai==0.3.285",
    "lm-eval==0.4.13",
    "openai",
    "aiohttp",
    "tenacity",
    "requests",
    "tiktoken",
)
LABELS = "ABCD"
WRONG_EVERY = 4  # every 4th question's key disagrees with the stub: expected accuracy 0.75
SETUP_TIMEOUT_S = 1800
IN_FLIGHT = 16  # requests every harness may have in flight
BENCHGEN_CLI = (sys.executable, "-c", "from benchgen.cli import main; main()")
BARE, SERVED, CLI = "bare client (ceiling)", "BenchGen over HTTP", "benchgen run (CLI)"
BENCHGEN_ROWS = ("inprocess", "http", "cli")
console = Console(width=None if sys.stdout.isatty() else 150)


# ---------------------------------------------------------------- the questions and their key


def stub_letter(choices: list[str]) -> str:
    """The letter the stub answers for these choice texts (the stub's rule, repeated here)."""
    digest = hashlib.sha256("\n".join(choices).encode()).digest()
    return LABELS[digest[0] % len(choices)]


def make_questions(count: int) -> list[dict[str, Any]]:
    """Deterministic mcq questions; the key matches the stub except on every 4th question."""
    made = []
    for i in range(count):
        choices = [f"option {colour} {i}" for colour in ("red", "green", "blue", "amber")]
        letter = stub_letter(choices)
        if i % WRONG_EVERY == 0:
            letter = LABELS[(LABELS.index(letter) + 1) % len(LABELS)]
        made.append(
            {
                "prompt": f"Question {i}: which option is right?",
                "choices": choices,
                "answer": letter,
            }
        )
    return made


def expected_accuracy(questions: list[dict[str, Any]]) -> float:
    """What every harness must report: the share of keys that match the stub's letter."""
    right = sum(1 for q in questions if stub_letter(q["choices"]) == q["answer"])
    return right / len(questions)


# ---------------------------------------------------------------- the stub endpoint (own process)

_CHOICE_LINE = re.compile(r"^\s*\(?([A-Z])[.):]\s+(.+?)\s*$", re.M)


@dataclass
class StubStats:
    """Counters since the last GET /stats (which returns and resets them)."""

    requests: int = 0
    in_flight: int = 0
    max_in_flight: int = 0
    first_at: float = 0.0
    last_at: float = 0.0

    def snapshot_and_reset(self) -> dict[str, Any]:
        window = self.last_at - self.first_at if self.requests else 0.0
        shown = {
            "requests": self.requests,
            "max_in_flight": self.max_in_flight,
            "window_s": window,
            "first_at": self.first_at,  # time.monotonic(): one clock for every process here
        }
        self.requests = self.max_in_flight = 0
        self.first_at = self.last_at = 0.0
        return shown


def _reply_text(body: bytes) -> str:
    payload = json.loads(body or b"{}")
    messages = payload.get("messages") or [{}]
    content = messages[-1].get("content", "")
    if isinstance(content, list):  # content parts
        content = "\n".join(str(part.get("text", "")) for part in content)
    found = _CHOICE_LINE.findall(str(content))
    letter = stub_letter([text for _, text in found]) if found else "stub"
    return f"Thinking it over.\nANSWER: {letter}"


def _http(status: int, body: dict[str, Any]) -> bytes:
    data = json.dumps(body).encode()
    head = f"HTTP/1.1 {status} OK\r\nContent-Type: application/json\r\n"
    # Headers and body in one write: split writes cost a delayed-ACK round trip each.
    return (head + f"Content-Length: {len(data)}\r\n\r\n").encode() + data


def _completion(text: str) -> dict[str, Any]:
    message = {"role": "assistant", "content": text}
    usage = {"prompt_tokens": 60, "completion_tokens": 6, "total_tokens": 66}
    return {
        "id": "chatcmpl-stub",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": "stub",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": usage,
    }


async def _read_request(reader: asyncio.StreamReader) -> tuple[str, bytes] | None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, ConnectionError):
        return None
    lines = head.decode("latin-1").split("\r\n")
    length = 0
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
    return lines[0], await reader.readexactly(length)


async def _answer(stats: StubStats, latency_s: float, body: bytes) -> bytes:
    now = time.monotonic()
    stats.requests += 1
    stats.first_at = stats.first_at or now
    stats.last_at = now
    stats.in_flight += 1
    stats.max_in_flight = max(stats.max_in_flight, stats.in_flight)
    try:
        await asyncio.sleep(latency_s)
    finally:
        stats.in_flight -= 1
    return _http(200, _completion(_reply_text(body)))


async def _connection(
    stats: StubStats,
    latency_s: float,
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
) -> None:
    writer.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        while request := await _read_request(reader):
            line, body = request
            if line.startswith("GET /stats"):
                reply = _http(200, stats.snapshot_and_reset())
            else:
                reply = await _answer(stats, latency_s, body)
            writer.write(reply)
            await writer.drain()
    except (ConnectionError, asyncio.IncompleteReadError):
        pass
    finally:
        writer.close()


async def serve_stub(latency_s: float) -> None:
    """Serve on 127.0.0.1 until killed; prints the port first."""
    handler = partial(_connection, StubStats(), latency_s)
    server = await asyncio.start_server(handler, "127.0.0.1", 0, backlog=512)
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


class StubProcess:
    """`with StubProcess(0.05) as stub:` runs the stub in its own process at `stub.base_url`."""

    def __init__(self, latency_s: float) -> None:
        self.latency_s = latency_s
        self.port = 0
        self.process: subprocess.Popen[str] | None = None

    def __enter__(self) -> StubProcess:
        command = [
            sys.executable,
            str(Path(__file__).resolve()),
            "--serve-stub",
            "--latency-ms",
            str(self.latency_s * 1000),
        ]
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)  # noqa: S603
        assert self.process.stdout is not None
        self.port = int(self.process.stdout.readline())
        return self

    def __exit__(self, *_: object) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(10)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def stats(self) -> dict[str, Any]:
        """Counters since the last call (and reset them)."""
        url = f"http://127.0.0.1:{self.port}/stats"
        with urllib.request.urlopen(url, timeout=10) as reply:
            return dict(json.load(reply))


# ---------------------------------------------------------------- one measurement


@dataclass
class Sample:
    """One harness run: wall time, accuracy it reported, the stub's view, or why it failed."""

    wall_s: float = 0.0
    accuracy: float | None = None
    first_answer_s: float | None = None
    queue_s: float | None = None
    server_cpu_s: float | None = None  # CPU the serving process spent on the run
    started_at: float | None = None  # time.monotonic() when timing began, for the stub's view
    first_request_s: float | None = None  # from started_at to the stub's first request
    cpu_timeline: list[tuple[float, float]] = field(default_factory=list)  # (monotonic, CPU s)
    first_request_cpu_s: float | None = None  # CPU the harness's process had spent by then
    stub: dict[str, Any] = field(default_factory=dict)
    error: str = ""


@dataclass
class Harness:
    """A named harness: `run(base_url, questions, workdir, timeout_s)` returns one Sample."""

    name: str
    run: Callable[[str, list[dict[str, Any]], Path, float], Sample]
    samples: list[Sample] = field(default_factory=list)


# ---------------------------------------------------------------- BenchGen


def _benchgen_setup(
    data_dir: Path, base_url: str, questions: list[dict[str, Any]]
) -> tuple[Runtime, Principal, str, str]:
    """A fresh runtime with a user, their benchmark and the stub as a platform model."""
    # Imported here, not at the top: the stub's process runs this file too and needs none of it.
    from benchgen.core.config import Settings
    from benchgen.core.context import Principal
    from benchgen.services import models
    from benchgen.services.accounts import credits, users
    from benchgen.services.benchmarks import lifecycle
    from benchgen.services.runtime import build_runtime, transaction

    settings = Settings(
        data_dir=data_dir,
        worker_threads=0,
        run_concurrency=IN_FLIGHT,
        model_host_allowlist="127.0.0.1",
        argon2_time_cost=1,
        argon2_memory_kib=64,
    )
    runtime = build_runtime(settings)
    operator = Principal.cli()
    with transaction(runtime, operator) as ctx:
        user_id = users.create_user(ctx, "bench@example.com", "password123").id
        credits.grant_credits(ctx, user_id, 10 * len(questions))
    spec = {"title": "Throughput", "format": "mcq", "questions": questions}
    with transaction(runtime, Principal.web(user_id)) as ctx:
        benchmark_id = lifecycle.create_benchmark(ctx, spec).benchmark.id
    model = {
        "name": "Stub",
        "kind": "openai_compat",
        "endpoint_model": "stub",
        "base_url": base_url,
        "api_key": "dummy",
        "price_per_question": 1,
        "params": {"max_tokens": 64},
    }
    with transaction(runtime, operator) as ctx:
        model_id = models.create_platform_model(ctx, model).id
    return runtime, Principal.web(user_id), benchmark_id, model_id


def _poll_until_done(
    runtime: Runtime, user: Principal, run_id: str, started: float, timeout_s: float
) -> tuple[RunView, float | None]:
    from benchgen.services.runs import launch
    from benchgen.services.runtime import transaction

    first = None
    while time.perf_counter() - started < timeout_s:
        with transaction(runtime, user, write=False) as ctx:
            view = launch.get_run(ctx, run_id)
        if first is None and view.done_count > 0:
            first = time.perf_counter() - started
        if view.status in ("completed", "failed", "cancelled"):
            return view, first
        time.sleep(0.02)
    raise TimeoutError(f"the run did not finish within {timeout_s:g} s")


def run_benchgen(
    base_url: str, questions: list[dict[str, Any]], workdir: Path, timeout_s: float
) -> Sample:
    """Time one BenchGen run from `start_run` to `completed`."""
    from benchgen.jobs.worker import start_workers, stop_workers
    from benchgen.services.runs import launch
    from benchgen.services.runtime import transaction

    runtime, user, benchmark_id, model_id = _benchgen_setup(workdir, base_url, questions)
    workers = start_workers(runtime, 1)
    try:
        time.sleep(0.5)  # the worker looks at the queue once a second: arrive mid-interval
        started = time.perf_counter()
        with transaction(runtime, user) as ctx:
            run_id = launch.start_run(ctx, benchmark_id, model_id).id
        view, first = _poll_until_done(runtime, user, run_id, started, timeout_s)
        wall = time.perf_counter() - started
    finally:
        stop_workers(workers)
        runtime.close()
    if view.status != "completed":
        return Sample(wall, error=f"run {view.status}: {view.error[:200]}")
    queue = (view.started_at - view.created_at).total_seconds() if view.started_at else None
    return Sample(wall, view.summary.get("accuracy"), first, queue)


# ---------------------------------------------------------------- the ceiling: a bare client

_ANSWER = re.compile(r"ANSWER:\s*([A-Z])")


def run_bare_client(
    base_url: str, questions: list[dict[str, Any]], workdir: Path, timeout_s: float
) -> Sample:
    """16 threads, each with one keep-alive `http.client` connection, ask every question once
    and check the letter: what the wire and the stub allow, with no harness around it."""
    url = urllib.parse.urlsplit(base_url)
    bodies = [
        json.dumps(
            {"model": "stub", "messages": [{"role": "user", "content": _lm_eval_prompt(q)}]}
        ).encode()
        for q in questions
    ]
    tickets, right = iter(range(len(questions))), [0]
    lock = threading.Lock()

    def work() -> None:
        connection = http.client.HTTPConnection(url.hostname or "", url.port, timeout=timeout_s)
        while True:
            with lock:
                index = next(tickets, None)
            if index is None:
                break
            headers = {"Content-Type": "application/json"}
            connection.request("POST", f"{url.path}/chat/completions", bodies[index], headers)
            reply = json.loads(connection.getresponse().read())
            found = _ANSWER.search(reply["choices"][0]["message"]["content"])
            with lock:
                right[0] += bool(found and found.group(1) == questions[index]["answer"])
        connection.close()

    started, monotonic = time.perf_counter(), time.monotonic()
    threads = [threading.Thread(target=work) for _ in range(IN_FLIGHT)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - started
    return Sample(wall, right[0] / len(questions), started_at=monotonic)


# ---------------------------------------------------------------- BenchGen over HTTP, and its CLI


def _data_dir_env(data_dir: Path, src: Path | None = None) -> dict[str, str]:
    """The environment of a `benchgen` process on `data_dir`, set up as `_benchgen_setup` is,
    running the code in `src` when given (a baseline) instead of the checkout's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BENCHGEN_")}
    if src is not None:
        env["PYTHONPATH"] = str(src)  # ahead of the editable install of the checkout
    return env | {
        "BENCHGEN_DATA_DIR": str(data_dir),
        "BENCHGEN_MODEL_HOST_ALLOWLIST": "127.0.0.1",
        "BENCHGEN_RUN_CONCURRENCY": str(IN_FLIGHT),
        "BENCHGEN_ARGON2_TIME_COST": "1",
        "BENCHGEN_ARGON2_MEMORY_KIB": "64",
    }


def _prepared(data_dir: Path, base_url: str, count: int, src: Path | None) -> list[str]:
    """A data folder with the user, benchmark and stub model, made by the code that will use
    it (its own migrations): [email, benchmark, model, token]."""
    command = [sys.executable, __file__, "--prepare", str(data_dir), "--stub-url", base_url]
    done = run_command(
        [*command, "--questions", str(count)],
        300,
        env=_data_dir_env(data_dir, src),
        capture_output=True,
        check=True,
    )
    prepared: list[str] = json.loads(done.stdout.splitlines()[-1])
    return prepared


def prepare(data_dir: Path, base_url: str, questions: list[dict[str, Any]]) -> list[str]:
    """`--prepare`: set up `data_dir` in this interpreter and return what `_prepared` does."""
    from benchgen.core.context import Principal
    from benchgen.services.accounts import credits, tokens
    from benchgen.services.runtime import transaction

    runtime, user, benchmark_id, model_id = _benchgen_setup(data_dir, base_url, questions)
    assert user.user_id is not None
    try:
        with transaction(runtime, Principal.cli(user.user_id)) as ctx:
            token = tokens.create_token(ctx, "bench", ["read", "runs"]).secret
        with transaction(runtime, Principal.cli()) as ctx:
            credits.grant_credits(ctx, user.user_id, 100 * len(questions))
    finally:
        runtime.close()
    return ["bench@example.com", benchmark_id, model_id, token]


def _cpu_s(pid: int) -> float:
    """User and system CPU seconds of process `pid` so far, all its threads."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class ServedBenchGen:
    """`benchgen serve` on its own data folder, started at the first run and kept up: each run
    is timed from `POST /api/v1/runs` to the run's `finished_at`, polling every 0.25 s."""

    def __init__(self, src: Path | None = None) -> None:
        self.src = src
        self.folder = tempfile.TemporaryDirectory(prefix="benchgen-serve-")
        self.process: subprocess.Popen[bytes] | None = None
        self.url = ""
        self.prepared: list[str] = []

    def start(self, base_url: str, questions: list[dict[str, Any]]) -> None:
        data_dir = Path(self.folder.name)
        self.prepared = _prepared(data_dir, base_url, len(questions), self.src)
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        command = [*BENCHGEN_CLI, "serve", "--host", "127.0.0.1", "--port", str(port)]
        log = (data_dir / "serve.log").open("w")
        self.process = subprocess.Popen(  # noqa: S603 - our interpreter and CLI, fixed arguments
            command, env=_data_dir_env(data_dir, self.src), stdout=log, stderr=STDOUT
        )
        self.url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while not _healthy(self.url):
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"benchgen serve did not start; see {data_dir / 'serve.log'}")
            time.sleep(0.1)

    def __call__(
        self, base_url: str, questions: list[dict[str, Any]], workdir: Path, timeout_s: float
    ) -> Sample:
        if self.process is None:
            self.start(base_url, questions)
        assert self.process is not None
        _, benchmark_id, model_id, token = self.prepared
        headers = {"Authorization": f"Bearer {token}"}
        with httpx.Client(base_url=self.url, headers=headers, timeout=60) as client:
            time.sleep(0.5)  # the workers look at the queue every 0.25 s: arrive mid-interval
            cpu, started, wall = _cpu_s(self.process.pid), time.time(), time.perf_counter()
            monotonic = time.monotonic()
            body = {"benchmark_id": benchmark_id, "model_id": model_id}
            run = client.post("/api/v1/runs", json=body).raise_for_status().json()
            while run["status"] not in ("completed", "failed", "cancelled"):
                if time.perf_counter() - wall > timeout_s:
                    return Sample(timeout_s, error="timed out")
                time.sleep(0.25)
                run = client.get(f"/api/v1/runs/{run['id']}").raise_for_status().json()
            server_cpu = _cpu_s(self.process.pid) - cpu
        if run["status"] != "completed":
            return Sample(time.perf_counter() - wall, error=f"run {run['status']}")
        finished = datetime.fromisoformat(run["finished_at"]).timestamp() - started
        accuracy = run["summary"].get("accuracy")
        return Sample(finished, accuracy, server_cpu_s=server_cpu, started_at=monotonic)

    def close(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(30)
        self.folder.cleanup()


def _healthy(url: str) -> bool:
    try:
        return httpx.get(f"{url}/healthz", timeout=1).status_code == 200
    except httpx.TransportError:
        return False


def run_benchgen_cli(
    base_url: str,
    questions: list[dict[str, Any]],
    workdir: Path,
    timeout_s: float,
    src: Path | None = None,
) -> Sample:
    """`benchgen run --benchmark … --model … --as …` from a shell, on a prepared data folder,
    timed from process start to exit; the accuracy is read from what it prints."""
    workdir.mkdir(parents=True)
    email, benchmark_id, model_id, _ = _prepared(workdir, base_url, len(questions), src)
    command = [*BENCHGEN_CLI, "run", "--benchmark", benchmark_id, "--model", model_id]
    env = _data_dir_env(workdir, src)
    started, wall = time.monotonic(), time.perf_counter()
    with (
        subprocess.Popen(  # noqa: S603 - our interpreter and CLI, fixed arguments
            [*command, "--as", email], env=env, stdout=PIPE, stderr=PIPE, text=True
        ) as process,
        CpuTimeline(process.pid) as timeline,
    ):
        try:
            stdout, stderr = process.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            process.kill()
            raise
    elapsed = time.perf_counter() - wall
    if process.returncode != 0:
        return Sample(elapsed, error=f"exit {process.returncode}: {stderr[-300:]}")
    found = re.search(r"completed: accuracy ([0-9.]+)%", stdout)
    accuracy = float(found.group(1)) / 100 if found else None
    return Sample(elapsed, accuracy, started_at=started, cpu_timeline=timeline.samples)


class CpuTimeline:
    """`with CpuTimeline(pid) as timeline:` samples the process's CPU seconds every 5 ms into
    `timeline.samples`, as (time.monotonic(), CPU s), until the block ends or the process does."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.samples: list[tuple[float, float]] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> CpuTimeline:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop.set()
        self.thread.join()

    def _sample(self) -> None:
        while not self.stop.wait(0.005):
            try:
                self.samples.append((time.monotonic(), _cpu_s(self.pid)))
            except (OSError, IndexError):  # reaped, or its /proc entry half gone
                return


def cpu_at(timeline: list[tuple[float, float]], moment: float) -> float | None:
    """The CPU seconds of the last sample taken at or before `moment` (None before the first)."""
    before = [cpu for at, cpu in timeline if at <= moment]
    return before[-1] if before else None


# ---------------------------------------------------------------- the peers


def peer_bin(name: str) -> Path:
    """A program in the peers' virtual environment."""
    return PEERS_VENV / "bin" / name


def run_command(command: list[str], timeout_s: float, **kwargs: Any) -> CompletedProcess[str]:
    """Every subprocess goes through here: an argument list (no shell) and a timeout."""
    return subprocess.run(command, timeout=timeout_s, text=True, **kwargs)  # noqa: S603


def setup_peers() -> None:
    """Create bench/.peers-venv and install the peers into it (never into the project's venv)."""
    python = shutil.which("python3") or sys.executable
    if not peer_bin("python").exists():
        console.print(f"Creating {PEERS_VENV} …")
        run_command([python, "-m", "venv", str(PEERS_VENV)], 300, check=True)
    pip = [str(peer_bin("python")), "-m", "pip", "install", "--quiet"]
    console.print(f"Installing {' '.join(PEER_PACKAGES)} …")
    run_command([*pip, "--upgrade", "pip"], SETUP_TIMEOUT_S, check=True)
    run_command([*pip, *PEER_PACKAGES], SETUP_TIMEOUT_S, check=True)


def peer_env(workdir: Path) -> dict[str, str]:
    """Offline environment for both peers: a dummy key, no hub, a private HF_HOME."""
    env = dict(os.environ)
    env.update(
        OPENAI_API_KEY="dummy",
        HF_HUB_OFFLINE="1",
        HF_DATASETS_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        HF_HOME=str(workdir / "hf"),
        INSPECT_DISPLAY="none",
        NO_COLOR="1",
    )
    return env


def timed_subprocess(command: list[str], cwd: Path, timeout_s: float) -> tuple[float, str]:
    """Run a peer; (wall seconds, "" or the reason it failed with the tail of its output)."""
    log = cwd / "output.log"
    started = time.perf_counter()
    try:
        with log.open("w") as out:
            env = peer_env(cwd)
            done = run_command(command, timeout_s, cwd=cwd, env=env, stdout=out, stderr=STDOUT)
    except subprocess.TimeoutExpired:
        return time.perf_counter() - started, f"timed out after {timeout_s:g} s"
    wall = time.perf_counter() - started
    if done.returncode != 0:
        tail = log.read_text(errors="replace").strip().splitlines()[-3:]
        return wall, f"exit {done.returncode}: {' | '.join(tail)[-300:]}"
    return wall, ""


INSPECT_TASK = """\
from inspect_ai import Task, task
from inspect_ai.dataset import json_dataset
from inspect_ai.scorer import choice
from inspect_ai.solver import multiple_choice


@task
def bench_mcq():
    return Task(dataset=json_dataset("mcq.jsonl"), solver=multiple_choice(), scorer=choice())
"""


def run_inspect(
    base_url: str, questions: list[dict[str, Any]], workdir: Path, timeout_s: float
) -> Sample:
    """`inspect eval` over a JSONL dataset with multiple_choice() and choice()."""
    workdir.mkdir(parents=True)
    (workdir / "task.py").write_text(INSPECT_TASK)
    rows = [
        {"input": q["prompt"], "choices": q["choices"], "target": q["answer"]} for q in questions
    ]
    (workdir / "mcq.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    # It refuses an absolute task path from another folder: run it from the task's folder.
    command = [
        str(peer_bin("inspect")),
        "eval",
        "task.py",
        "--model",
        "openai/stub",
        "--model-base-url",
        base_url,
        "-M",
        "responses_api=false",
        "--max-connections",
        str(IN_FLIGHT),
        "--display",
        "none",
        "--log-dir",
        "logs",
    ]
    wall, error = timed_subprocess(command, workdir, timeout_s)
    if error:
        return Sample(wall, error=error)
    return Sample(wall, _inspect_accuracy(workdir, timeout_s))


def _inspect_accuracy(workdir: Path, timeout_s: float) -> float:
    logs = sorted((workdir / "logs").glob("*.eval"))
    if not logs:
        raise RuntimeError("Inspect wrote no .eval log")
    command = [str(peer_bin("inspect")), "log", "dump", "--header-only", str(logs[-1])]
    dump = run_command(command, timeout_s, capture_output=True, check=True, env=peer_env(workdir))
    header = json.loads(dump.stdout)
    if header.get("status") != "success":
        message = (header.get("error") or {}).get("message", "")
        raise RuntimeError(f"Inspect status {header.get('status')}: {message[:200]}")
    return float(header["results"]["scores"][0]["metrics"]["accuracy"]["value"])


LM_EVAL_TASK = """\
task: bench_mcq
dataset_path: json
dataset_kwargs:
  data_files:
    test: {data}
test_split: test
output_type: generate_until
doc_to_text: "{{{{question}}}}"
doc_to_target: "{{{{answer}}}}"
generation_kwargs:
  until: []
  max_gen_toks: 64
  do_sample: false
filter_list:
  - name: letter
    filter:
      - function: regex
        regex_pattern: "ANSWER:\\\\s*([A-D])"
        group_select: -1
      - function: take_first
metric_list:
  - metric: exact_match
    aggregation: mean
    higher_is_better: true
metadata:
  version: 1.0
"""


def _lm_eval_prompt(question: dict[str, Any]) -> str:
    lines = [f"{label}. {text}" for label, text in zip(LABELS, question["choices"], strict=True)]
    instruction = (
        "Choose the single best option. End your reply with a final line of the "
        "form:\nANSWER: X\nwhere X is one letter from A, B, C, D."
    )
    return f"{question['prompt']}\n\n" + "\n".join(lines) + f"\n\n{instruction}"


def run_lm_eval(
    base_url: str, questions: list[dict[str, Any]], workdir: Path, timeout_s: float
) -> Sample:
    """`lm_eval` with a custom generate_until task (YAML + JSONL) and a letter regex filter."""
    tasks = workdir / "tasks"
    tasks.mkdir(parents=True)
    data = workdir / "mcq.jsonl"
    rows = [{"question": _lm_eval_prompt(q), "answer": q["answer"]} for q in questions]
    data.write_text("".join(json.dumps(row) + "\n" for row in rows))
    (tasks / "bench_mcq.yaml").write_text(LM_EVAL_TASK.format(data=data))
    model_args = (
        f"base_url={base_url}/chat/completions,model=stub,num_concurrent={IN_FLIGHT},"
        "max_retries=1,tokenized_requests=False,tokenizer_backend=None"
    )
    command = [
        str(peer_bin("lm_eval")),
        "--model",
        "local-chat-completions",
        "--model_args",
        model_args,
        "--apply_chat_template",
        "--tasks",
        "bench_mcq",
        "--include_path",
        str(tasks),
        "--output_path",
        str(workdir / "out"),
    ]
    wall, error = timed_subprocess(command, workdir, timeout_s)
    if error:
        return Sample(wall, error=error)
    found = sorted((workdir / "out").rglob("results_*.json"))
    if not found:
        return Sample(wall, error="lm-eval wrote no results file")
    results = json.loads(found[-1].read_text())["results"]["bench_mcq"]
    return Sample(wall, float(results["exact_match,letter"]))


# ---------------------------------------------------------------- driving and reporting


def measure(
    harness: Harness,
    stub: StubProcess,
    questions: list[dict[str, Any]],
    root: Path,
    timeout_s: float,
) -> Sample:
    """One run of one harness in its own folder; failures become the sample's error."""
    slug = re.sub(r"[^a-z]+", "-", harness.name.lower()).strip("-")
    workdir = root / f"{slug}-{len(harness.samples)}"
    stub.stats()  # reset the stub's counters
    try:
        sample = harness.run(stub.base_url, questions, workdir, timeout_s)
    except Exception as exc:  # a broken peer must not stop the others
        sample = Sample(error=f"{type(exc).__name__}: {str(exc)[:300]}")
    sample.stub = stub.stats()
    if sample.started_at is not None and sample.stub.get("first_at"):
        sample.first_request_s = sample.stub["first_at"] - sample.started_at
        sample.first_request_cpu_s = cpu_at(sample.cpu_timeline, sample.stub["first_at"])
    shutil.rmtree(workdir, ignore_errors=True)
    return sample


def _median(values: list[float | None]) -> float | None:
    present = [value for value in values if value is not None]
    return statistics.median(present) if present else None


def _fmt(value: float | None, digits: int = 1) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def summarize(harness: Harness, count: int, ceiling: float | None) -> list[str]:
    """One table row: medians over the successful runs; `ceiling` is the bare client's q/s."""
    ok = [s for s in harness.samples if not s.error]
    errors = sorted({s.error for s in harness.samples if s.error})
    wall = _median([s.wall_s for s in ok])
    rate = count / wall if wall else None
    windows = [s.stub.get("window_s") or None for s in ok]
    sending = _median([count / w if w else None for w in windows])
    accuracies = sorted({round(s.accuracy, 4) for s in ok if s.accuracy is not None})
    cpu = _median([s.server_cpu_s * 1000 / count if s.server_cpu_s else None for s in ok])
    return [
        harness.name,
        f"{len(ok)}/{len(harness.samples)}",
        _fmt(rate),
        _fmt(rate / ceiling if rate and ceiling else None, 2),
        _fmt(wall, 2),
        _fmt(sending),
        _fmt(_median([s.first_request_s for s in ok]), 2),
        _fmt(_median([s.first_request_cpu_s for s in ok]), 2),
        _fmt(_median([s.first_answer_s for s in ok]), 2),
        _fmt(_median([s.queue_s for s in ok]), 2),
        _fmt(cpu, 2),
        ", ".join(f"{a:.4f}" for a in accuracies) or "—",
        str(max((s.stub.get("max_in_flight", 0) for s in ok), default="—")),
        "; ".join(errors)[:300],
    ]


COLUMNS = (
    "Harness",
    "ok runs",
    "q/s end to end",
    "× bare client",
    "wall s",
    "q/s while sending",
    "first model request s",
    "CPU s to first request",
    "first answer s",
    "queue wait s",
    "server CPU ms/question",
    "accuracy",
    "max in flight",
    "note",
)


def print_table(
    harnesses: list[Harness], skipped: dict[str, str], args: argparse.Namespace
) -> None:
    ideal = IN_FLIGHT / (args.latency_ms / 1000)
    title = (
        f"{args.questions} mcq questions, stub latency {args.latency_ms:g} ms, "
        f"{IN_FLIGHT} in flight (ideal {ideal:.0f} q/s); medians of {args.repeats}"
    )
    table = Table(title=title)
    for column in COLUMNS:
        table.add_column(column, overflow="fold")
    bare = next((h for h in harnesses if h.name == BARE), None)
    ceiling = None
    if bare is not None:
        wall = _median([s.wall_s for s in bare.samples if not s.error])
        ceiling = args.questions / wall if wall else None
    for harness in harnesses:
        table.add_row(*summarize(harness, args.questions, ceiling))
    for name, reason in skipped.items():
        table.add_row(name, "0/0", *["—"] * (len(COLUMNS) - 3), reason)
    console.print(table)


def print_check(harnesses: list[Harness], expected: float) -> None:
    """The built-in correctness check: every harness must report the key's accuracy."""
    reported = {
        h.name: {round(s.accuracy, 4) for s in h.samples if s.accuracy is not None}
        for h in harnesses
    }
    agree = all(values == {round(expected, 4)} for values in reported.values() if values)
    shown = ", ".join(f"{name} {sorted(v) or '—'}" for name, v in reported.items())
    verdict = "[green]agree[/]" if agree else "[red]DISAGREE[/]"
    if not any(reported.values()):
        verdict = "[yellow]nothing to compare: no run finished[/]"
    console.print(f"Accuracy check (expected {expected:.4f} from the key): {shown} → {verdict}")


def pick_harnesses(
    args: argparse.Namespace, baseline: Path | None
) -> tuple[list[Harness], dict[str, str]]:
    """The bare client (the ceiling) and BenchGen three ways (in-process worker, a server that is
    already up, the CLI; those `--only` names), the last two each followed by its run on the
    `baseline` code when given; the peers when their environment exists (else why not)."""
    harnesses = [Harness(BARE, run_bare_client)]
    if "inprocess" in args.only:
        harnesses.append(Harness("BenchGen", run_benchgen))
    rev = args.baseline_rev
    if "http" in args.only:
        harnesses.append(Harness(SERVED, ServedBenchGen()))
        if baseline is not None:
            harnesses.append(Harness(f"{SERVED} ({rev})", ServedBenchGen(baseline)))
    if "cli" in args.only:
        harnesses.append(Harness(CLI, run_benchgen_cli))
        if baseline is not None:
            harnesses.append(Harness(f"{CLI} ({rev})", partial(run_benchgen_cli, src=baseline)))
    peers = {"Inspect AI": ("inspect", run_inspect), "lm-eval": ("lm_eval", run_lm_eval)}
    skipped = {}
    for name, (program, runner) in peers.items():
        if not args.with_peers:
            skipped[name] = "skipped (--no-peers)"
        elif not peer_bin(program).exists():
            skipped[name] = f"skipped: no {peer_bin(program)}; run with --setup-peers"
        else:
            harnesses.append(Harness(name, runner))
    return harnesses, skipped


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--setup-peers",
        action="store_true",
        help="create bench/.peers-venv with Inspect AI and lm-eval first",
    )
    parser.add_argument(
        "--no-peers", dest="with_peers", action="store_false", help="run BenchGen only"
    )
    parser.add_argument(
        "--peers-venv",
        type=Path,
        default=PEERS_VENV,
        help=f"the peers' virtual environment (default {PEERS_VENV})",
    )
    parser.add_argument(
        "--only",
        type=lambda value: value.split(","),
        default=list(BENCHGEN_ROWS),
        help=f"BenchGen's rows to run, comma-separated from {', '.join(BENCHGEN_ROWS)} "
        "(default all; the bare client always runs)",
    )
    parser.add_argument("--repeats", type=int, default=3, help="runs per harness (default 3)")
    parser.add_argument("--questions", type=int, default=1000, help="questions (default 1000)")
    parser.add_argument("--latency-ms", type=float, default=50.0, help="stub latency (50)")
    parser.add_argument(
        "--timeout",
        type=float,
        default=300.0,
        help="seconds one harness run may take (default 300)",
    )
    parser.add_argument(
        "--baseline-rev",
        default="",
        help="also run the HTTP and CLI rows on the src/ of this git revision",
    )
    parser.add_argument("--serve-stub", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--prepare", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--stub-url", default="", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    global PEERS_VENV  # one setting for the whole command, read by peer_bin and setup_peers
    args = parse_args(argv)
    PEERS_VENV = args.peers_venv.resolve()
    if args.serve_stub:
        asyncio.run(serve_stub(args.latency_ms / 1000))
        return
    if args.prepare:
        print(json.dumps(prepare(args.prepare, args.stub_url, make_questions(args.questions))))
        return
    if args.setup_peers:
        setup_peers()
    questions = make_questions(args.questions)
    with StubProcess(args.latency_ms / 1000) as stub, tempfile.TemporaryDirectory() as tmp:
        baseline = baseline_src(args.baseline_rev, Path(tmp)) if args.baseline_rev else None
        for src in {None, baseline}:
            warm_bytecode(src)
        harnesses, skipped = pick_harnesses(args, baseline)
        for repeat in range(args.repeats):
            for harness in harnesses:
                sample = measure(harness, stub, questions, Path(tmp), args.timeout)
                harness.samples.append(sample)
                status = sample.error or f"accuracy {_fmt(sample.accuracy, 4)}"
                console.print(
                    f"  run {repeat + 1}: {harness.name}: {sample.wall_s:.2f} s, {status}"
                )
        for harness in harnesses:
            if isinstance(harness.run, ServedBenchGen):
                harness.run.close()
    print_table(harnesses, skipped, args)
    print_check(harnesses, expected_accuracy(questions))


if __name__ == "__main__":
    main()
