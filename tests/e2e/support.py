"""What browser tests share: the live server, data to seed, and what a person does in several
flows (signing in, talking to the agent)."""

from __future__ import annotations

import re
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import uvicorn
from playwright.sync_api import ConsoleMessage, Page, expect

from benchgen.app import create_app
from benchgen.core.config import Settings
from benchgen.core.context import Principal
from benchgen.jobs.worker import Worker
from benchgen.services.runs import launch
from benchgen.services.runtime import Runtime, build_runtime
from tests.support import World

PASSWORD = "password123"  # what tests.support.World gives every user
CHROMIUM = Path("/usr/bin/chromium")
# No sandbox: CI runs as root in a container. No background networking or component updates:
# the machine has no network, and a browser test must not wait on one.
LAUNCH_ARGS = ["--no-sandbox", "--disable-background-networking", "--disable-component-update"]
VIEWPORT = {"width": 1280, "height": 800}
# What Chromium writes on the console when the page's policy refuses something.
VIOLATION = "Content Security Policy"

# A built-in model every deployment has (seeded by the migrations): answers at once, offline.
FIRST_CHOICE = "Baseline: always the first choice"
FIRST_CHOICE_ID = "mdl_builtin_first"
# "Always the first choice" gets the sky wrong (B) and the grass and the snow right (A).
SHADES = {
    "title": "Shades",
    "format": "mcq",
    "questions": [
        {"prompt": prompt, "choices": choices, "answer": answer, "tags": [tag]}
        for prompt, choices, answer, tag in [
            ("Colour of the sky?", ["Green", "Blue"], "B", "sky"),
            ("Colour of grass?", ["Green", "Blue"], "A", "land"),
            ("Colour of snow?", ["White", "Black"], "A", "land"),
        ]
    ],
}
# A request the offline planner turns into a create proposal (docs/agent.md).
CREATE_MOONS = 'create a benchmark called "Moons"\n1. Moon of Earth?\na) Luna\nb) Titan\nAnswer: a'


class LiveServer:
    """uvicorn serving the app on a free port of 127.0.0.1, in a thread of this process.

    The socket is bound before the thread starts, so the port is known and cannot be taken by
    someone else between choosing and listening.
    """

    def __init__(self, runtime: Runtime) -> None:
        self.socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.socket.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.socket.getsockname()[1]}"
        config = uvicorn.Config(
            create_app(runtime.settings, runtime),
            log_level="warning",
            # Open event streams (a run's live log) must not hold the shutdown for long.
            timeout_graceful_shutdown=2,
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.socket]}, daemon=True
        )

    def start(self, timeout_s: float = 15) -> None:
        """Start serving; returns once the app has run its startup."""
        self.thread.start()
        deadline = time.monotonic() + timeout_s
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the live server did not start")
            time.sleep(0.02)

    def stop(self) -> None:
        """Stop serving and wait for the thread."""
        self.server.should_exit = True
        self.thread.join(10)
        self.socket.close()


@dataclass(frozen=True)
class Person:
    """A user made for one test."""

    id: str
    email: str


@dataclass
class Site:
    """A running BenchGen: its address, its runtime, and `world` to seed data through services."""

    url: str
    runtime: Runtime
    world: World

    def drain_jobs(self, timeout_s: float = 30) -> None:
        """Run every queued job to its end, on a thread of its own (the evaluation engine runs
        its own event loop, which cannot start in a thread where Playwright holds one)."""

        failures: list[Exception] = []

        def work() -> None:
            worker = Worker(self.runtime)
            try:
                while worker.run_once():
                    pass
            except Exception as exc:  # raised again in the test's thread below
                failures.append(exc)

        thread = threading.Thread(target=work, name="e2e-worker", daemon=True)
        thread.start()
        thread.join(timeout_s)
        assert not thread.is_alive(), f"the queued jobs did not finish in {timeout_s} s"
        if failures:
            raise failures[0]

    def finished_run(self, user_id: str, spec: dict[str, Any], model_id: str) -> tuple[str, str]:
        """A benchmark of `user_id` made from `spec`, and a completed run of `model_id` on it:
        (benchmark id, run id)."""
        benchmark_id = self.world.benchmark(user_id, spec)
        run = self.world.do(Principal.web(user_id), launch.start_run, benchmark_id, model_id)
        self.drain_jobs()
        return benchmark_id, run.id


def site_settings(data_dir: Path, template: Path | None = None) -> Settings:
    """Settings for a site in `data_dir`: a copy of the migrated SQLite `template` when given,
    cheap hashing, and no embedded workers (tests run jobs with `Site.drain_jobs`, so they can
    watch a run go from queued to done)."""
    data_dir.mkdir(parents=True)
    if template is not None:
        shutil.copy(template, data_dir / "benchgen.db")
    return Settings(
        data_dir=data_dir,
        database_url=f"sqlite:///{data_dir / 'benchgen.db'}",
        argon2_time_cost=1,
        argon2_memory_kib=64,
        worker_threads=0,
        create_limit_per_minute=1000,
        create_limit_per_day=1000,
    )


@contextmanager
def served_site(data_dir: Path, template: Path | None = None) -> Iterator[Site]:
    """BenchGen served by uvicorn on 127.0.0.1 from `data_dir` (`site_settings`), until the
    block ends."""
    runtime = build_runtime(site_settings(data_dir, template))
    server = LiveServer(runtime)
    server.start()
    try:
        yield Site(server.url, runtime, World(runtime))
    finally:
        server.stop()
        runtime.close()


def watch_console(page: Page, found: list[str]) -> None:
    """Add to `found` each Content-Security-Policy violation Chromium reports on the console
    (an inline script, style or handler it refused), and each uncaught script error."""

    def note(message: ConsoleMessage) -> None:
        if message.type == "error" and VIOLATION in message.text:
            found.append(f"{page.url}: {message.text}")

    page.on("console", note)
    page.on("pageerror", lambda error: found.append(f"{page.url}: {error}"))


def sign_in(page: Page, email: str, password: str = PASSWORD) -> None:
    """Sign in through the form, as a person would, and land on the dashboard."""
    page.goto("/signin")
    page.get_by_label("Email").fill(email)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Sign in").click()
    expect(page).to_have_url(re.compile(r"/$"))


def start_conversation(page: Page) -> None:
    """Open the chat and start a new conversation."""
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Chat").click()
    page.get_by_role("button", name="Start a conversation").click()
    expect(page).to_have_url(re.compile(r"/chat/conv_\w+$"))


def say(page: Page, text: str) -> None:
    """Send a message to the agent and wait until its reply is on the page."""
    before = page.get_by_role("article").count()
    page.get_by_label("Message to the agent").fill(text)
    page.get_by_role("button", name="Send").click()
    replies = page.get_by_role("article")
    expect(replies).to_have_count(before + 1)
    expect(replies.last.get_by_text("The agent is working")).to_have_count(0)
