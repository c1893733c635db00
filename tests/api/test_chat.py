"""Chat through HTTP: conversations, turns, approval buttons posted back, slow turns, refusals."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient
from httpx import Response
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo

from benchgen.agent.brains import Brain, BrainUnavailable
from benchgen.app import create_app
from benchgen.core.context import Principal
from benchgen.core.permissions import Scope
from benchgen.services.accounts import tokens
from benchgen.services.benchmarks import bundles
from benchgen.services.runtime import Runtime
from tests.agent.scripted import Script, think_with
from tests.bundle_factory import SCORER, HeldPrograms, bundle, require_sandbox
from tests.support import World

ALL_SCOPES = sorted(scope.value for scope in Scope)
SUMS = {
    "title": "Sums",
    "format": "qa",
    "questions": [{"prompt": "2+2?", "answer": "4"}, {"prompt": "3+3?", "answer": "6"}],
}
PROPOSE = [("propose_create_benchmark", SUMS)]
Connect = Callable[[Brain], TestClient]


@pytest.fixture
def connect(runtime: Runtime) -> Iterator[Connect]:
    """A started app with the given brain (closed, waiting for its turns, at the end)."""
    opened: list[Any] = []

    def _connect(brain: Brain) -> TestClient:
        client = TestClient(create_app(runtime.settings, runtime, brain=brain))
        opened.append(client)
        return client.__enter__()

    yield _connect
    for client in reversed(opened):
        client.__exit__(None, None, None)


@pytest.fixture
def ana(world: World) -> dict[str, str]:
    return bearer(world.token(world.user("ana@example.com"), ALL_SCOPES))


def bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


def new_conversation(client: TestClient, auth: dict[str, str]) -> str:
    response = client.post("/api/v1/chat/conversations", headers=auth)
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def send(client: TestClient, auth: dict[str, str], conv: str, **body: Any) -> Response:
    return client.post(f"/api/v1/chat/conversations/{conv}/messages", json=body, headers=auth)


def error_code(response: Response, status: int) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body["error"]) == {"code", "message", "details"}
    return str(body["error"]["code"])


@pytest.mark.both_backends
def test_create_list_and_read_a_transcript(connect: Connect, ana: dict[str, str]) -> None:
    client = connect(Script(["Hello! I can build benchmarks."]).brain())
    conv = new_conversation(client, ana)
    assert conv.startswith("conv_")
    titled = client.post("/api/v1/chat/conversations", json={"title": "Mine"}, headers=ana)
    assert titled.json()["title"] == "Mine"
    turn = send(client, ana, conv, text="hi").json()
    assert (turn["status"], turn["reply"]) == ("completed", "Hello! I can build benchmarks.")
    assert turn["buttons"] == [] and turn["proposal"] is None
    listed = client.get("/api/v1/chat/conversations?limit=1", headers=ana).json()
    assert len(listed["items"]) == 1 and listed["next_cursor"]
    rest = client.get(
        "/api/v1/chat/conversations", params={"cursor": listed["next_cursor"]}, headers=ana
    ).json()
    assert {listed["items"][0]["id"], rest["items"][0]["id"]} == {conv, titled.json()["id"]}
    transcript = client.get(f"/api/v1/chat/conversations/{conv}", headers=ana).json()
    assert (transcript["id"], transcript["turn_count"], transcript["busy"]) == (conv, 1, False)
    (record,) = transcript["turns"]
    assert record["turn_id"] == turn["turn_id"] and record["seq"] == 1
    assert (record["user_text"], record["action"], record["brain"]) == ("hi", None, "scripted")
    assert record["finished_at"] is not None and record["tool_calls"] == []


def test_a_transcript_comes_a_page_at_a_time(connect: Connect, ana: dict[str, str]) -> None:
    """It answered every turn of a conversation, however many, in one response."""
    client = connect(Script(["one", "two", "three"]).brain())
    conv = new_conversation(client, ana)
    for text in ("a", "b", "c"):
        assert send(client, ana, conv, text=text).status_code == 200
    path = f"/api/v1/chat/conversations/{conv}"
    latest = client.get(path, params={"limit": 2}, headers=ana).json()
    assert [t["seq"] for t in latest["turns"]] == [2, 3] and latest["turn_count"] == 3
    older = client.get(path, params={"limit": 2, "before": 2}, headers=ana).json()
    assert [(t["seq"], t["reply"]) for t in older["turns"]] == [(1, "one")]
    for window in ({"limit": 101}, {"before": 0}, {"before": 2**63}):
        assert error_code(client.get(path, params=window, headers=ana), 422) == "invalid_input"


@pytest.mark.both_backends
def test_approve_by_posting_the_button_back(connect: Connect, ana: dict[str, str]) -> None:
    client = connect(Script([PROPOSE]).brain())
    conv = new_conversation(client, ana)
    turn = send(client, ana, conv, text="make a sums benchmark").json()
    assert turn["status"] == "awaiting_approval", turn["reply"]
    proposal = turn["proposal"]
    assert proposal["kind"] == "create_benchmark" and proposal["preview"]["text"]
    assert set(proposal) >= {"id", "kind", "preview", "preview_hash", "expires_at"}
    labels = [button["label"] for button in turn["buttons"]]
    assert labels == ["Approve", "Decline"]
    approve = turn["buttons"][0]["action"]
    assert approve == {
        "type": "approve",
        "proposal_id": proposal["id"],
        "preview_hash": proposal["preview_hash"],
    }
    done = send(client, ana, conv, action=approve).json()
    assert done["status"] == "completed", done["reply"]
    benchmark_id = next(word for word in done["reply"].split() if word.startswith("bm_"))
    benchmark = client.get(f"/api/v1/benchmarks/{benchmark_id.rstrip('.')}", headers=ana)
    assert benchmark.json()["title"] == "Sums"
    assert error_code(send(client, ana, conv, action=approve), 409) == "conflict"


def test_altered_or_incomplete_approvals_are_refused(connect: Connect, ana: dict[str, str]) -> None:
    client = connect(Script([PROPOSE]).brain())
    conv = new_conversation(client, ana)
    turn = send(client, ana, conv, text="make a sums benchmark").json()
    approve = dict(turn["buttons"][0]["action"])
    missing = send(
        client, ana, conv, action={k: v for k, v in approve.items() if k != "preview_hash"}
    )
    assert error_code(missing, 422) == "invalid_input"
    assert ["body", "action", "preview_hash"] in [
        error["loc"] for error in missing.json()["error"]["details"]["errors"]
    ]
    altered = {**approve, "preview_hash": "0" * 64}
    assert error_code(send(client, ana, conv, action=altered), 409) == "conflict"
    both = send(client, ana, conv, text="yes", action=approve)
    assert error_code(both, 422) == "invalid_input"


def test_refusals_scope_owner_and_turn_credentials(
    connect: Connect, world: World, ana: dict[str, str]
) -> None:
    client = connect(Script(["hello"]).brain())
    conv = new_conversation(client, ana)
    turn = send(client, ana, conv, text="hi").json()
    unread = bearer(world.token(world.user("cy@example.com"), ["runs"]))
    assert error_code(client.post("/api/v1/chat/conversations", headers=unread), 403) == (
        "permission_denied"
    )
    bob = bearer(world.token(world.user("bob@example.com"), ALL_SCOPES))
    for response in (
        client.get(f"/api/v1/chat/conversations/{conv}", headers=bob),
        client.get(f"/api/v1/chat/conversations/{conv}/turns/{turn['turn_id']}", headers=bob),
        send(client, bob, conv, text="let me in"),
    ):
        assert error_code(response, 404) == "not_found"
    assert client.get("/api/v1/chat/conversations", headers=bob).json()["items"] == []
    parent = world.api(ana["Authorization"].removeprefix("Bearer "))
    credential = world.do(
        parent, tokens.mint_turn_credential, "turn_x", frozenset({Scope.READ}), timedelta(minutes=1)
    )
    assert credential.startswith("bga_")
    as_agent = send(client, bearer(credential), conv, text="hi")
    assert error_code(as_agent, 401) == "unauthenticated"


@pytest.mark.both_backends
def test_a_slow_turn_answers_running_then_finishes(
    connect: Connect, runtime: Runtime, ana: dict[str, str]
) -> None:
    runtime.settings = runtime.settings.model_copy(update={"agent_wait_s": 0.05})
    release = threading.Event()

    def slow(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        release.wait(30)
        return ModelResponse(parts=[TextPart("finally done")])

    client = connect(think_with(slow))
    conv = new_conversation(client, ana)
    turn = send(client, ana, conv, text="take your time").json()
    assert turn["status"] == "running" and turn["reply"] == ""
    second = send(client, ana, conv, text="and another thing")
    assert error_code(second, 409) == "conflict"
    busy = client.get(f"/api/v1/chat/conversations/{conv}", headers=ana).json()
    assert busy["busy"] is True
    release.set()
    url = f"/api/v1/chat/conversations/{conv}/turns/{turn['turn_id']}"
    deadline = time.monotonic() + 30
    while (current := client.get(url, headers=ana).json())["status"] == "running":
        assert time.monotonic() < deadline, "the turn did not finish"
        time.sleep(0.05)
    assert (current["status"], current["reply"]) == ("completed", "finally done")
    # The conversation is free again: a quick turn completes within an ordinary wait (50 ms
    # was too short for a whole turn on a loaded machine).
    runtime.settings = runtime.settings.model_copy(update={"agent_wait_s": 30})
    assert send(client, ana, conv, text="thanks").json()["status"] == "completed"


@pytest.mark.parametrize(
    ("spec", "said"),
    [
        ("nonsense", "must be offline, local:"),
        ("openai:", "must be offline, local:"),
        # Found at the start, not at every turn after it (each failed with FatalModelError).
        ("local:/nowhere/brain.gguf", "no GGUF model file at '/nowhere/brain.gguf'"),
        # In the operator's words, not the SDK's advice to pass `api_key=` in code.
        ("anthropic:claude-x", "set BENCHGEN_AGENT_API_KEY or ANTHROPIC_API_KEY"),
        ("openai:gpt-x", "set BENCHGEN_AGENT_API_KEY or OPENAI_API_KEY"),
    ],
)
def test_an_unusable_brain_setting_stops_the_app(
    runtime: Runtime, spec: str, said: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for variable in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(variable, raising=False)
    wrong = runtime.settings.model_copy(update={"agent_model": spec})
    with pytest.raises(BrainUnavailable, match="BENCHGEN_AGENT_MODEL=") as refused:
        create_app(wrong, runtime)
    assert said in str(refused.value) and "api_key=" not in str(refused.value)


@pytest.mark.both_backends
def test_done_when_create_approve_run_ask_and_read_results_over_http(
    connect: Connect, runtime: Runtime, ana: dict[str, str]
) -> None:
    """The issue's finish line, with the default offline brain and the real job worker."""
    from benchgen.agent.brains import build_brain
    from benchgen.jobs.worker import Worker

    client = connect(build_brain(runtime.settings))
    conv = new_conversation(client, ana)
    created = send(client, ana, conv, text='create a qa benchmark called "Sums"\nQ: 2+2?\nA: 4')
    turn = created.json()
    assert turn["status"] == "awaiting_approval" and 'Answer: "4"' in turn["reply"]
    done = send(client, ana, conv, action=turn["buttons"][0]["action"]).json()
    assert done["status"] == "completed" and "Created benchmark" in done["reply"]
    asked = send(client, ana, conv, text="run Baseline: echo the prompt on Sums").json()
    assert asked["proposal"]["kind"] == "start_run", asked["reply"]
    started = send(client, ana, conv, action=asked["buttons"][0]["action"]).json()
    assert "Started run run_" in started["reply"]
    while Worker(runtime).run_once():
        pass
    status = send(client, ana, conv, text="is it done?").json()
    assert status["status"] == "completed" and "completed" in status["reply"].lower()
    results = send(client, ana, conv, text="show the results of my last run").json()
    assert "2+2?" in results["reply"]


@pytest.mark.parametrize("backend", ["sqlite"])
def test_writes_go_on_while_an_agents_bundle_change_runs_its_programs(
    connect: Connect, world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Proposing a bundle change and approving it each run the bundle's programs: as an upload
    # through the API, with no transaction open, so SQLite's write lock is free meanwhile.
    require_sandbox()
    ana_id = world.user("ana@example.com")
    ana, bob = (bearer(world.token(who, ALL_SCOPES)) for who in (ana_id, world.user("b@x.org")))
    web = Principal.web(ana_id)
    where = {"benchmark_id": world.do(web, bundles.upload_bundle, bundle(), "b.zip").benchmark.id}
    fixed = {**where, "path": "scoring_program/score.py", "content": SCORER + "\n"}
    steps = [
        [("copy_bundle_to_scratch", where)],
        [("write_scratch_file", fixed)],
        [("propose_bundle_change", where)],
    ]
    held = HeldPrograms(monkeypatch)
    client = connect(Script(steps).brain())
    conv = new_conversation(client, ana)
    took: list[float] = []

    def meanwhile(message: dict[str, Any]) -> dict[str, Any]:
        answers: list[Response] = []
        thread = threading.Thread(target=lambda: answers.append(send(client, ana, conv, **message)))
        thread.start()
        try:
            held.wait_started()
            started = time.monotonic()
            made = client.post(
                "/api/v1/benchmarks", json={"title": "x", "format": "qa"}, headers=bob
            )
            took.append(time.monotonic() - started)
            assert made.status_code == 201, made.text
        finally:
            held.release()
            thread.join(60)
        held.rearm()
        return dict(answers[0].json())

    turn = meanwhile({"text": "fix the scorer"})
    assert turn["status"] == "awaiting_approval", turn["reply"]
    done = meanwhile({"action": turn["buttons"][0]["action"]})
    assert "version 2" in done["reply"], done["reply"]
    assert max(took) < 1.5, f"writes waited {took} s for the agent's programs"
