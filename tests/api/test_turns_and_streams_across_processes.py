"""Chat turns and live logs work whichever web process a request reaches, and survive one dying:
two `benchgen serve` processes on one PostgreSQL database, the agent thinking with a slow
OpenAI-compatible stub, runs answered by another."""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from benchgen.services import models
from benchgen.services.runtime import Runtime
from tests.api.test_limits_across_processes import _at_once
from tests.evals.stub_openai import Fault, StubOpenAI
from tests.processes import Deployment, serve_together
from tests.support import OPERATOR, World
from tests.web.support import PASSWORD, csrf_of

LEASE_S = 6  # BENCHGEN_AGENT_TURN_LEASE_S: short, so a dead process's turn is released soon


@pytest.fixture
def two_servers(runtime: Runtime) -> Iterator[Any]:
    """Two servers whose agent thinks with a stub that answers the first message after 120 s
    (a turn to interrupt) and later ones after 2 s."""

    def think(n: int, prompt: str) -> Fault:
        return Fault.completion("Still here.", 120 if n == 1 else 2)

    with StubOpenAI(fail=think) as stub:
        env = {
            "BENCHGEN_AGENT_MODEL": "openai:stub-model",
            "BENCHGEN_AGENT_BASE_URL": stub.base_url,
            "BENCHGEN_AGENT_WAIT_S": "0.2",
            "BENCHGEN_AGENT_TURN_LEASE_S": str(LEASE_S),
            "BENCHGEN_RUN_CONCURRENCY": "1",
        }
        first, second = Deployment(runtime, **env), Deployment(runtime, **env)
        try:
            serve_together(first, second)
            yield first, second, stub
        finally:
            first.stop()
            second.stop()


def _say(url: str, token: str, conversation: str, text: str) -> httpx.Response:
    return httpx.post(
        f"{url}/api/v1/chat/conversations/{conversation}/messages",
        json={"text": text},
        headers={"Authorization": f"Bearer {token}"},
        timeout=60,
    )


def _turn(url: str, token: str, conversation: str, turn: str) -> dict[str, Any]:
    answer = httpx.get(
        f"{url}/api/v1/chat/conversations/{conversation}/turns/{turn}",
        headers={"Authorization": f"Bearer {token}"},
        timeout=30,
    )
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


def _conversation(url: str, token: str) -> str:
    made = httpx.post(
        f"{url}/api/v1/chat/conversations", headers={"Authorization": f"Bearer {token}"}, timeout=30
    )
    assert made.status_code == 201, made.text
    return str(made.json()["id"])


@pytest.mark.parametrize("backend", ["postgres"])
def test_a_turn_whose_server_dies_is_failed_and_its_conversation_released(
    world: World, two_servers: Any
) -> None:
    first, second, stub = two_servers
    token = world.token(world.user("ana@example.com"), ["read"], days=365)
    conversation = _conversation(first.url, token)
    started = _say(first.url, token, conversation, "hello")
    assert started.status_code == 200 and started.json()["status"] == "running"
    # The other server refuses a second message while the turn lives, whichever gets it.
    codes = _at_once(
        [
            functools.partial(lambda url: _say(url, token, conversation, "again").status_code, url)
            for url in (first.url, second.url, second.url)
        ]
    )
    assert codes == [409, 409, 409]
    while not stub.received:  # the brain is thinking: the turn is under way
        time.sleep(0.05)
    first.server.kill()  # SIGKILL mid-turn: nothing marks the turn, its heartbeat just stops
    killed = time.monotonic()
    while (answer := _say(second.url, token, conversation, "are you there?")).status_code == 409:
        assert time.monotonic() - killed < LEASE_S + 20, "the dead turn was never released"
        time.sleep(0.5)
    assert answer.status_code == 200, answer.text
    dead = _turn(second.url, token, conversation, started.json()["turn_id"])
    assert dead["status"] == "failed" and "cut off" in dead["reply"]
    new = answer.json()
    while new["status"] == "running":
        time.sleep(0.3)
        new = _turn(second.url, token, conversation, new["turn_id"])
    assert new["status"] == "completed" and new["reply"] == "Still here."


def _events(response: httpx.Response) -> Iterator[tuple[str, str, int | None]]:
    """(event, data, id) of a server-sent event stream, as they arrive."""
    block: list[str] = []
    for line in response.iter_lines():
        if line:
            block.append(line)
            continue
        fields = dict(part.split(": ", 1) for part in block if ": " in part)
        seen = fields.get("id")
        yield fields.get("event", ""), fields.get("data", ""), int(seen) if seen else None
        block = []


def _sign_in(browser: httpx.Client, email: str) -> None:
    csrf = csrf_of(browser.get("/signin").text)
    form = {"email": email, "password": PASSWORD, "csrf_token": csrf}
    assert browser.post("/signin", data=form).status_code == 303


@pytest.mark.parametrize("backend", ["postgres"])
def test_a_live_log_goes_on_from_another_server_after_its_own_dies(
    world: World, two_servers: Any
) -> None:
    first, second, _ = two_servers
    world.rt.settings.model_host_allowlist = "127.0.0.1"
    ana = world.user("ana@example.com", credits_=1000)
    questions = [
        {"prompt": f"Pick {n}", "choices": ["yes", "no"], "answer": "A"} for n in range(40)
    ]
    bench = world.benchmark(ana, {"title": "Long", "format": "mcq", "questions": questions})
    token = world.token(ana, ["read", "runs"], days=365)
    with StubOpenAI(latency_s=0.25) as answers, httpx.Client(base_url=first.url) as web:
        _sign_in(web, "ana@example.com")
        spec = {"name": "Slow", "endpoint_model": "stub", "base_url": answers.base_url}
        model = world.do(OPERATOR, models.create_platform_model, spec).id
        body = {"benchmark_id": bench, "model_id": model}
        posted = httpx.post(
            f"{first.url}/api/v1/runs", json=body, headers={"Authorization": f"Bearer {token}"}
        )
        assert posted.status_code == 202, posted.text
        events_path = f"/runs/{posted.json()['id']}/events"
        before: list[tuple[str, int]] = []
        with web.stream("GET", events_path) as stream:
            for name, data, seen in _events(stream):
                if name == "log" and seen is not None:
                    before.append((data, seen))
                if re.match(r"Processing: \d+/40", data) and len(before) >= 3:
                    break
        first.server.kill()  # the stream's server dies; its embedded workers with it
        web.base_url = httpx.URL(second.url)  # the proxy sends the browser elsewhere
        headers = {"Last-Event-ID": str(before[-1][1])}
        after: list[tuple[str, int]] = []
        with web.stream("GET", events_path, headers=headers) as stream:
            for name, data, seen in _events(stream):
                if name == "log" and seen is not None:
                    after.append((data, seen))
                if name == "end":
                    assert data == "completed"
                    break
        whole = [
            (data, seen) for name, data, seen in _events(web.get(events_path)) if name == "log"
        ]
    assert before + after == whole  # every line once, in order, across the two servers
    assert "Processing: 40/40 (100%)" in [line for line, _ in after]
