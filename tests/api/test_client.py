"""The Python client against a real server on loopback (uvicorn in a thread, an embedded worker),
and its error mapping and paging against canned responses."""

from __future__ import annotations

import csv
import io
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, cast

import httpx
import pytest
import uvicorn
from sqlalchemy import event

from benchgen.agent.brains import Brain
from benchgen.app import create_app
from benchgen.client import (
    BenchGen,
    ClientError,
    Conflict,
    Frozen,
    InsufficientCredits,
    InvalidInput,
    NotFound,
    PermissionDenied,
    RateLimited,
    Run,
    RunTimeout,
    ServerError,
    TurnTimeout,
    Unauthenticated,
    Unreachable,
    as_input,
)
from benchgen.core.clock import ManualClock
from benchgen.services import models
from benchgen.services.accounts import tokens
from benchgen.services.runtime import Runtime
from tests.agent.scripted import Script
from tests.support import MCQ, OPERATOR, QA, World

ALL_SCOPES = ["read", "runs", "create", "edit", "publish"]
FIRST_CHOICE = "mdl_builtin_first"
COLOURS = cast("list[dict[str, Any]]", MCQ["questions"])  # the sky is B, grass is A
CAPITALS = cast("list[dict[str, Any]]", QA["questions"])


@pytest.fixture
def brain() -> Brain:
    """The agent's brain in chat: it proposes one benchmark, then only talks."""
    sums = {"title": "Sums", "format": "qa", "questions": [{"prompt": "2+2?", "answer": "4"}]}
    return Script([[("propose_create_benchmark", sums)]]).brain()


@pytest.fixture
def server(runtime: Runtime, brain: Brain) -> Iterator[str]:
    """The app served by uvicorn on a free loopback port, with one embedded worker thread."""
    runtime.settings = runtime.settings.model_copy(update={"worker_threads": 1})
    app = create_app(runtime.settings, runtime, brain=brain)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    served = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=served.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not served.started:
        assert thread.is_alive(), "the server thread ended before it started"
        assert time.monotonic() < deadline, "the server did not start within 20 s"
        time.sleep(0.01)
    yield f"http://127.0.0.1:{port}"
    served.should_exit = True
    thread.join(30)
    sock.close()
    assert not thread.is_alive(), "the server did not stop"


@pytest.fixture
def connect(server: str) -> Iterator[Callable[[str], BenchGen]]:
    """Clients for the test server, closed at the end."""
    made: list[BenchGen] = []

    def _connect(secret: str) -> BenchGen:
        made.append(BenchGen(server, secret, timeout=30))
        return made[-1]

    yield _connect
    for client in made:
        client.close()


def test_full_flow_benchmark_run_results_export(
    connect: Callable[[str], BenchGen], world: World
) -> None:
    ana = world.user("ana@example.com")
    bg = connect(world.token(ana, ALL_SCOPES))
    assert bg.me()["email"] == "ana@example.com"

    created = bg.create_benchmark("Colours", "mcq", COLOURS, description="demo")
    benchmark = created["benchmark"]
    assert (benchmark["format"], benchmark["question_count"]) == ("mcq", 2)
    assert bg.quota is not None and (bg.quota.limit, bg.quota.remaining) == (3, 2)
    assert [b["id"] for b in bg.list_benchmarks(mine=True)] == [benchmark["id"]]
    assert [q["answer"] for q in bg.questions(benchmark["id"])] == ["B", "A"]
    assert bg.estimate(benchmark["id"], FIRST_CHOICE)["credits"] == 0

    run = bg.start_run(benchmark["id"], FIRST_CHOICE)
    assert run["status"] == "queued"
    seen: list[str] = []
    done = bg.wait_for_run(
        run["id"], timeout_s=60, poll_s=0.1, on_progress=lambda r: seen.append(r["status"])
    )
    assert done["status"] == "completed" and seen[-1] == "completed"
    assert (done["done_count"], done["summary"]["accuracy"]) == (2, 0.5)  # always "A"

    rows = bg.results(run["id"])
    assert [(row["position"], row["correct"]) for row in rows] == [(0, False), (1, True)]
    table = list(csv.DictReader(io.StringIO(bg.export(run["id"], format="csv"))))
    assert [(row["position"], row["correct"]) for row in table] == [("0", "False"), ("1", "True")]
    jsonl = [json.loads(line) for line in bg.export(run["id"]).splitlines()]
    assert [row["position"] for row in jsonl] == [0, 1]
    assert bg.log(run["id"]) and bg.log(run["id"], after=bg.log(run["id"])[-1]["id"]) == []

    board = bg.leaderboard(benchmark["id"])
    assert board["rows"] == [] and board["columns"][0] == "accuracy"
    assert bg.rescore(run["id"])["changed_count"] == 0
    assert bg.list_runs(benchmark["id"])[0]["id"] == run["id"]
    with pytest.raises(Conflict):
        bg.cancel(run["id"])
    with pytest.raises(Frozen) as frozen:
        bg.change_benchmark(benchmark["id"], questions=COLOURS[::-1])
    assert frozen.value.status == 409 and frozen.value.code == "frozen"
    assert bg.get_benchmark(benchmark["id"])["questions_frozen"] is True


def test_import_change_publish_and_models(connect: Callable[[str], BenchGen], world: World) -> None:
    bg = connect(world.token(world.user("ana@example.com"), ALL_SCOPES))
    content = '{"prompt": "2+2?", "answer": "4"}\n{"prompt": "3+3?", "answer": "6"}\n'
    imported = bg.import_benchmark("Sums", "qa", content)["benchmark"]
    assert imported["question_count"] == 2
    more = [*map(as_input, bg.questions(imported["id"])), {"prompt": "4+4?", "answer": "8"}]
    preview = bg.preview_change(imported["id"], title="Small sums", questions=more)
    assert preview["metadata"]["title"] == {"before": "Sums", "after": "Small sums"}
    assert preview["version_after"] == preview["version_before"] + 1
    assert bg.get_benchmark(imported["id"])["title"] == "Sums"  # a preview applies nothing
    edited = bg.change_benchmark(imported["id"], title="Small sums")
    assert edited["benchmark"]["title"] == "Small sums"
    assert bg.publish(imported["id"])["visibility"] == "published"

    mine = bg.create_model("My Claude", "claude-test", kind="anthropic", api_key="sk-test")
    assert (mine["owner"], mine["has_api_key"]) == ("you", True)
    renamed = bg.update_model(mine["id"], name="Claude (mine)")
    assert bg.get_model(mine["id"])["name"] == renamed["name"] == "Claude (mine)"
    listed = {model["id"] for model in bg.models()}
    assert {FIRST_CHOICE, mine["id"]} <= listed


def test_errors_are_typed(connect: Callable[[str], BenchGen], world: World) -> None:
    ana, bob = world.user("ana@example.com"), world.user("bob@example.com")
    hidden = world.benchmark(bob)
    bg = connect(world.token(ana, ALL_SCOPES))

    with pytest.raises(NotFound) as missing:
        bg.get_benchmark(hidden)
    assert (missing.value.status, missing.value.code) == (404, "not_found")
    with pytest.raises(NotFound):
        bg.start_run(hidden, FIRST_CHOICE)

    with pytest.raises(InvalidInput) as invalid:
        bg.create_model("Local", "m", base_url="http://127.0.0.1:9/v1")
    assert invalid.value.status == 422
    assert invalid.value.errors[0]["loc"] == ["body", "base_url"]
    with pytest.raises(InvalidInput) as shape:
        bg.create_benchmark("Broken", "mcq", [{"prompt": "Pick", "choices": ["x", "y"]}])
    assert shape.value.details["errors"] and shape.value.message

    with pytest.raises(PermissionDenied) as denied:
        connect(world.token(ana, ["read"])).create_benchmark("No", "qa", CAPITALS)
    assert denied.value.status == 403

    priced = world.do(
        OPERATOR,
        models.create_platform_model,
        {"name": "Priced", "kind": "builtin", "endpoint_model": "random"}
        | {"price_per_question": 5},
    )
    own = bg.create_benchmark("Capitals", "qa", CAPITALS)["benchmark"]
    with pytest.raises(InsufficientCredits) as poor:
        bg.start_run(own["id"], priced.id)
    assert (poor.value.status, poor.value.needed, poor.value.balance) == (402, 10, 0)


def test_revoked_token_is_unauthenticated(connect: Callable[[str], BenchGen], world: World) -> None:
    ana = world.user("ana@example.com")
    secret = world.token(ana, ["read"])
    bg = connect(secret)
    token_id = bg.me()["token_id"]
    world.do(OPERATOR, tokens.revoke_token, token_id)
    with pytest.raises(Unauthenticated) as refused:
        bg.me()
    assert refused.value.status == 401 and "revoked" in refused.value.message


@pytest.mark.both_backends
def test_fourth_creation_in_a_minute_is_rate_limited(
    connect: Callable[[str], BenchGen], world: World, clock: ManualClock
) -> None:
    bg = connect(world.token(world.user("ana@example.com"), ALL_SCOPES))
    remaining = []
    for n in range(3):
        bg.create_benchmark(f"Quiz {n}", "qa", CAPITALS)
        assert bg.quota is not None
        remaining.append(bg.quota.remaining)
    assert remaining == [2, 1, 0]
    with pytest.raises(RateLimited) as limited:
        bg.create_benchmark("One too many", "qa", CAPITALS)
    assert limited.value.status == 429 and limited.value.retry_after == 60
    assert limited.value.details["window"] == "minute"
    clock.advance(seconds=61)
    assert bg.create_benchmark("Next minute", "qa", CAPITALS)["benchmark"]["id"]


def test_chat_propose_approve_and_read_back(
    connect: Callable[[str], BenchGen], world: World
) -> None:
    bg = connect(world.token(world.user("ana@example.com"), ALL_SCOPES))
    conversation = bg.create_conversation("Sums")
    conv = conversation["id"]
    assert (conversation["title"], conversation["turn_count"]) == ("Sums", 0)
    turn = bg.send_message(conv, text="make a sums benchmark")
    assert turn["status"] == "awaiting_approval" and turn["proposal"] is not None
    assert "2+2?" in turn["proposal"]["preview"]["text"]
    approve = turn["buttons"][0]["action"]
    done = bg.send_message(conv, action=approve)
    assert done["status"] == "completed", done["reply"]
    assert bg.wait_for_turn(conv, done["turn_id"]) == bg.get_turn(conv, done["turn_id"]) == done
    assert [b["title"] for b in bg.list_benchmarks(mine=True)] == ["Sums"]
    with pytest.raises(Conflict):
        bg.send_message(conv, action=approve)  # a replayed approval
    with pytest.raises(InvalidInput):
        bg.send_message(conv)  # neither text nor action
    assert [c["id"] for c in bg.list_conversations()] == [conv]
    transcript = bg.get_conversation(conv)
    assert [t["user_text"] for t in transcript["turns"]] == ["make a sums benchmark", ""]
    assert transcript["turns"][1]["action"] == approve


@pytest.mark.both_backends  # the race it guards against showed only on PostgreSQL
def test_a_new_conversation_is_there_for_the_next_request_even_when_its_commit_is_slow(
    connect: Callable[[str], BenchGen], world: World, runtime: Runtime
) -> None:
    # The flaky 404 made certain: when the creation's commit lags behind its response, the next
    # request (on PostgreSQL, which reads only committed rows) finds no conversation.
    bg = connect(world.token(world.user("ana@example.com"), ALL_SCOPES))
    with _slow_commit_after(runtime, "INSERT INTO conversations", seconds=0.5):
        conv = bg.create_conversation("Sums")["id"]
        turn = bg.send_message(conv, text="make a sums benchmark")
    assert turn["status"] == "awaiting_approval"


@contextmanager
def _slow_commit_after(runtime: Runtime, statement: str, seconds: float) -> Iterator[None]:
    """Delay the commit of every transaction that ran `statement` by `seconds`."""
    engine = runtime.database.engine

    def note(conn: Any, _cursor: Any, sql: str, *_args: Any) -> None:
        if sql.lstrip().lower().startswith(statement.lower()):
            conn.info["slow_commit"] = True

    def lag(conn: Any) -> None:
        if conn.info.pop("slow_commit", False):
            time.sleep(seconds)

    event.listen(engine, "before_cursor_execute", note)
    event.listen(engine, "commit", lag)
    try:
        yield
    finally:
        event.remove(engine, "commit", lag)
        event.remove(engine, "before_cursor_execute", note)


# ---------------------------------------------------------------- without a server


def _canned(handler: Callable[[httpx.Request], httpx.Response]) -> BenchGen:
    return BenchGen("http://bench.test/api/v1/", "bgp_x", transport=httpx.MockTransport(handler))


def _error(status: int, code: str, **details: Any) -> httpx.Response:
    body = {"error": {"code": code, "message": f"{code}!", "details": details}}
    return httpx.Response(status, json=body)


@pytest.mark.parametrize(
    ("response", "kind"),
    [
        (_error(401, "unauthenticated"), Unauthenticated),
        (_error(403, "permission_denied"), PermissionDenied),
        (_error(404, "not_found"), NotFound),
        (_error(409, "conflict"), Conflict),
        (_error(409, "frozen"), Frozen),
        (_error(422, "invalid_input", errors=[{"loc": ["title"], "msg": "bad"}]), InvalidInput),
        (_error(402, "insufficient_credits", needed=3, balance=1), InsufficientCredits),
        (_error(405, "method_not_allowed"), ClientError),
        (httpx.Response(502, text="<html>Bad gateway</html>"), ServerError),
        (httpx.Response(404, text="nope"), NotFound),
    ],
)
def test_error_mapping(response: httpx.Response, kind: type[ClientError]) -> None:
    with _canned(lambda _: response) as bg, pytest.raises(ClientError) as caught:
        bg.me()
    assert type(caught.value) is kind
    assert caught.value.status == response.status_code and caught.value.message


def test_rate_limited_reads_retry_after() -> None:
    limited = _error(429, "rate_limited", window="minute")
    limited.headers["Retry-After"] = "17"
    with _canned(lambda _: limited) as bg, pytest.raises(RateLimited) as caught:
        bg.create_benchmark("t", "qa", [])
    assert caught.value.retry_after == 17 and caught.value.details == {"window": "minute"}


def test_unreachable_server() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    with _canned(refuse) as bg, pytest.raises(Unreachable) as caught:
        bg.me()
    assert caught.value.status == 0


def test_lists_follow_every_cursor_and_send_the_token() -> None:
    seen: list[httpx.Request] = []

    def pages(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        cursor = int(request.url.params.get("cursor", "0"))
        items = [{"id": f"bm_{cursor + i}"} for i in range(2)]
        return httpx.Response(200, json={"items": items, "next_cursor": str(cursor + 2)})

    def limited(request: httpx.Request) -> httpx.Response:
        response = pages(request)
        if request.url.params.get("cursor") == "4":
            return httpx.Response(200, json={"items": [{"id": "bm_4"}], "next_cursor": None})
        return response

    with _canned(limited) as bg:
        found = [b["id"] for b in bg.list_benchmarks(mine=True, search="caps")]
    assert found == ["bm_0", "bm_1", "bm_2", "bm_3", "bm_4"]
    assert [r.url.path for r in seen] == ["/api/v1/benchmarks"] * 3
    assert seen[0].url.params["mine"] == "true" and seen[0].url.params["search"] == "caps"
    assert all(r.headers["Authorization"] == "Bearer bgp_x" for r in seen)


def test_wait_for_run_times_out_with_the_last_state() -> None:
    running = {"id": "run_1", "status": "running", "done_count": 1, "question_count": 4}
    reply = httpx.Response(200, json=running)
    with _canned(lambda _: reply) as bg, pytest.raises(RunTimeout) as caught:
        bg.wait_for_run("run_1", timeout_s=0.05, poll_s=0.01)
    last: Run = caught.value.run
    assert last["status"] == "running" and isinstance(caught.value, TimeoutError)


def test_token_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BENCHGEN_TOKEN", "bgp_from_env")
    with BenchGen("http://bench.test", transport=httpx.MockTransport(_echo_auth)) as bg:
        assert bg.me()["email"] == "Bearer bgp_from_env"
    monkeypatch.delenv("BENCHGEN_TOKEN")
    with pytest.raises(ValueError, match="BENCHGEN_TOKEN"):
        BenchGen("http://bench.test")


def _echo_auth(request: httpx.Request) -> httpx.Response:
    return httpx.Response(200, json={"email": request.headers["Authorization"]})


def test_wait_for_turn_polls_until_the_turn_is_no_longer_running() -> None:
    statuses = iter(["running", "running", "awaiting_approval"])
    seen: list[str] = []

    def turns(request: httpx.Request) -> httpx.Response:
        seen.append(request.url.path)
        return httpx.Response(200, json={"turn_id": "turn_1", "status": next(statuses)})

    with _canned(turns) as bg:
        assert bg.wait_for_turn("conv_1", "turn_1", poll_s=0.01)["status"] == "awaiting_approval"
    assert seen == ["/api/v1/chat/conversations/conv_1/turns/turn_1"] * 3
    running = httpx.Response(200, json={"turn_id": "turn_1", "status": "running"})
    with _canned(lambda _: running) as bg, pytest.raises(TurnTimeout) as caught:
        bg.wait_for_turn("conv_1", "turn_1", timeout_s=0.05, poll_s=0.01)
    assert caught.value.turn["status"] == "running" and isinstance(caught.value, TimeoutError)


def test_send_message_posts_the_action_verbatim_and_waits_long_enough() -> None:
    sent: list[httpx.Request] = []

    def record(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(200, json={"turn_id": "turn_1", "status": "completed"})

    action = {"type": "decline", "proposal_id": "prop_1"}
    with _canned(record) as bg:
        bg.send_message("conv_1", action=action)
        bg.send_message("conv_1", text="hello")
    assert [json.loads(r.content) for r in sent] == [{"action": action}, {"text": "hello"}]
    # The server may hold the request for its whole agent wait before answering `running`.
    assert sent[0].extensions["timeout"]["read"] >= 120
