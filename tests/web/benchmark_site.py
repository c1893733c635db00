"""One app and its people for a whole test module of benchmark pages (built once: fast).

Ana owns a private mcq benchmark written with hostile text, a qa one, and a scored one with a
run on its leaderboard; Bob collaborates on the hostile one; Cy is a stranger.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from bs4 import BeautifulSoup
from fastapi.testclient import TestClient

from benchgen.app import create_app
from benchgen.core.clock import ManualClock
from benchgen.core.config import Settings
from benchgen.core.context import Principal
from benchgen.db.session import Database
from benchgen.jobs.worker import Worker
from benchgen.services.runs import launch, leaderboards
from benchgen.services.runtime import Runtime
from tests.support import MCQ, World
from tests.web.support import WebUser

SCRIPT = "<script>alert(1)</script>"
IMG = '"><img src=x onerror=alert(1)>'
HOSTILE = f"{SCRIPT} {IMG}"
HOSTILE_MCQ = {
    "title": f"Quiz {HOSTILE}",
    "description": f"About {HOSTILE}",
    "format": "mcq",
    "questions": [
        {"prompt": f"Pick {HOSTILE}", "choices": [SCRIPT, IMG, "plain"], "answer": "B"},
        {"prompt": "Second?", "choices": ["yes", "no"], "answer": "A", "tags": [IMG]},
    ],
}
HOSTILE_QA = {
    "title": f"Open {IMG}",
    "format": "qa",
    "questions": [{"prompt": f"Say {SCRIPT}", "answer": [HOSTILE, "ok"]}],
}
FIRST_CHOICE = "mdl_builtin_first"


@dataclass
class Site:
    """The module's runtime, its people (each in their own browser) and benchmarks."""

    runtime: Runtime
    world: World
    ana: WebUser
    bob: WebUser
    cy: WebUser
    ana_id: str
    bob_id: str
    cy_id: str
    hostile: str  # private mcq, Bob collaborates
    hostile_qa: str  # private qa
    scored: str  # mcq with Ana's run on its leaderboard (questions frozen)
    run_id: str


def assert_escaped(html: str) -> None:
    """Nothing a user wrote became markup: no live script, no injected image."""
    assert "<script>alert" not in html
    soup = BeautifulSoup(html, "html.parser")
    assert soup.find("img", src="x") is None
    code = [tag for tag in soup.find_all("script") if tag.get("type") != "application/json"]
    assert all("alert(1)" not in tag.get_text() for tag in code)


def _settings(base: Path, template: Path) -> Settings:
    data = base / "data"
    data.mkdir()
    shutil.copy(template, data / "benchgen.db")
    return Settings(
        data_dir=data,
        database_url=f"sqlite:///{data / 'benchgen.db'}",
        argon2_time_cost=1,
        argon2_memory_kib=64,
        worker_threads=0,
    )


@pytest.fixture(scope="module")
def site(sqlite_template: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    """Everything the module's tests share; tests that change things use their own objects."""
    settings = _settings(tmp_path_factory.mktemp("benchmark-pages"), sqlite_template)
    runtime = Runtime(settings, Database(settings.resolved_database_url()), ManualClock())
    world = World(runtime)
    ids = {name: world.user(f"{name}@example.com", credits_=1000) for name in ("ana", "bob", "cy")}
    owner = Principal.web(ids["ana"])
    hostile = world.benchmark(ids["ana"], HOSTILE_MCQ)
    world.collaborator(ids["ana"], hostile, "bob@example.com")
    hostile_qa = world.benchmark(ids["ana"], HOSTILE_QA)
    scored = world.benchmark(ids["ana"], {**MCQ, "title": "Scored"})
    run_id = world.do(owner, launch.start_run, scored, FIRST_CHOICE).id
    while Worker(runtime).run_once():
        pass
    world.do(owner, leaderboards.add_to_leaderboard, run_id)
    clients = [TestClient(create_app(settings, runtime), follow_redirects=False) for _ in range(3)]
    try:
        for client in clients:
            client.__enter__()
        people = [
            WebUser.sign_in(client, f"{name}@example.com")
            for client, name in zip(clients, ids, strict=True)
        ]
        yield Site(
            runtime,
            world,
            *people,
            ids["ana"],
            ids["bob"],
            ids["cy"],
            hostile,
            hostile_qa,
            scored,
            run_id,
        )
    finally:
        for client in clients:
            client.__exit__(None, None, None)
        runtime.close()
