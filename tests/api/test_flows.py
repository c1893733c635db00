"""Whole flows through the HTTP API: status codes, bodies and headers a script relies on."""

from __future__ import annotations

import csv as csv_module
import io
import re
import threading
from datetime import timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient
from httpx import Response

from benchgen.core.clock import ManualClock
from benchgen.core.permissions import Scope
from benchgen.jobs.worker import Worker
from benchgen.services import models
from benchgen.services.accounts import credits, tokens
from benchgen.services.runtime import Runtime
from tests.evals.stub_openai import StubOpenAI
from tests.support import MCQ, OPERATOR, QA, World

# Model endpoints on 127.0.0.1 (the stubs) are allowed, as an operator's allow-list would.
pytestmark = pytest.mark.usefixtures("local_models")

FIRST = "mdl_builtin_first"
RANDOM = "mdl_builtin_random"
ALL_SCOPES = sorted(scope.value for scope in Scope)
TWELVE = {
    "title": "Twelve",
    "format": "mcq",
    "questions": [
        {"prompt": f"Question {i}: pick one", "choices": [f"a{i}", f"b{i}", f"c{i}"], "answer": "A"}
        for i in range(12)
    ],
}


@pytest.fixture
def ana(world: World) -> str:
    return world.user("ana@example.com", credits_=100)


@pytest.fixture
def auth(world: World, ana: str) -> dict[str, str]:
    return bearer(world.token(ana, ALL_SCOPES))


def bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


def error_of(response: Response, status: int, code: str) -> dict[str, Any]:
    """The envelope's error, after checking the status and the code."""
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message", "details"}
    assert body["error"]["code"] == code, body
    error: dict[str, Any] = body["error"]
    return error


def work_all(runtime: Runtime) -> None:
    worker = Worker(runtime)
    while worker.run_once():
        pass


def create(client: TestClient, auth: dict[str, str], spec: dict[str, Any] = QA) -> Response:
    return client.post("/api/v1/benchmarks", json=spec, headers=auth)


def start_run(
    client: TestClient, auth: dict[str, str], benchmark_id: str, model_id: str = FIRST
) -> Response:
    body = {"benchmark_id": benchmark_id, "model_id": model_id}
    return client.post("/api/v1/runs", json=body, headers=auth)


# --- Creating and importing ---------------------------------------------------------------------


@pytest.mark.both_backends
def test_create_returns_201_with_warnings_and_quota_headers(
    client: TestClient, auth: dict[str, str], clock: ManualClock
) -> None:
    spec = {
        "title": "Echoes",
        "format": "qa",
        "questions": [
            {"prompt": "Capital of France?", "answer": "Paris"},
            {"prompt": "capital of  France?", "answer": ["Paris", "Paris"]},
        ],
    }
    response = create(client, auth, spec)
    assert response.status_code == 201, response.text
    body = response.json()
    assert body["benchmark"]["id"].startswith("bm_")
    assert body["benchmark"]["question_count"] == 2
    assert body["benchmark"]["created_door"].startswith("api:tok_")
    assert body["benchmark"]["visibility"] == "private"
    assert {"loc": ["body", "questions", 1, "prompt"], "msg": "same prompt as question 1"} in body[
        "warnings"
    ]
    assert any(w["loc"] == ["body", "questions", 1, "answer"] for w in body["warnings"])
    assert response.headers["X-RateLimit-Limit"] == "3"
    assert response.headers["X-RateLimit-Remaining"] == "2"
    reset = clock.now() + timedelta(minutes=1)
    assert response.headers["X-RateLimit-Reset"] == str(int(reset.timestamp()))
    listed = client.get("/api/v1/benchmarks", params={"mine": True}, headers=auth).json()
    assert [item["id"] for item in listed["items"]] == [body["benchmark"]["id"]]


def test_invalid_input_is_422_with_the_field_path(client: TestClient, auth: dict[str, str]) -> None:
    missing = error_of(create(client, auth, {"format": "qa"}), 422, "invalid_input")
    assert ["body", "title"] in [e["loc"] for e in missing["details"]["errors"]]
    bad_format = error_of(create(client, auth, {**QA, "format": "essay"}), 422, "invalid_input")
    assert bad_format["details"]["errors"][0]["loc"] == ["body", "format"]
    bad_answer = {
        "title": "Letters",
        "format": "mcq",
        "questions": [{"prompt": "Pick", "choices": ["x", "y"], "answer": "Z"}],
    }
    error = error_of(create(client, auth, bad_answer), 422, "invalid_input")
    assert error["details"]["errors"][0]["loc"] == ["body", "questions", 0, "answer"]
    assert error["message"].startswith("questions.0.answer:")
    not_json = client.post(
        "/api/v1/benchmarks",
        content=b"{not json",
        headers={**auth, "Content-Type": "application/json"},
    )
    error_of(not_json, 422, "invalid_input")
    # Refused creations never count against the limit.
    assert create(client, auth).headers["X-RateLimit-Remaining"] == "2"


def test_import_jsonl_and_csv(client: TestClient, auth: dict[str, str]) -> None:
    jsonl = (
        '{"prompt": "2+2?", "answer": "4"}\n'
        "\n"
        '{"prompt": "Colour of the sky?", "answer": ["blue", "azure"], "tags": ["easy"]}\n'
    )
    body = {"title": "Sums", "format": "qa", "content": jsonl}
    made = client.post("/api/v1/benchmarks/import", json=body, headers=auth)
    assert made.status_code == 201, made.text
    assert made.headers["X-RateLimit-Remaining"] == "2"
    bm = made.json()["benchmark"]["id"]
    questions = client.get(f"/api/v1/benchmarks/{bm}/questions", headers=auth).json()
    assert [q["answer"] for q in questions["items"]] == [["4"], ["blue", "azure"]]
    assert questions["items"][1]["tags"] == ["easy"]

    csv_text = "prompt,choice_a,choice_b,answer,tags\nSky?,green,blue,B,colour;easy\n"
    body = {"title": "Sky", "format": "mcq", "content_format": "csv", "content": csv_text}
    made = client.post("/api/v1/benchmarks/import", json=body, headers=auth)
    assert made.status_code == 201, made.text
    bm = made.json()["benchmark"]["id"]
    item = client.get(f"/api/v1/benchmarks/{bm}/questions", headers=auth).json()["items"][0]
    assert (item["choices"], item["answer"], item["tags"]) == (
        {"A": "green", "B": "blue"},
        "B",
        ["colour", "easy"],
    )


@pytest.mark.parametrize(
    ("content_format", "content", "line"),
    [
        ("jsonl", '{"prompt": "a", "answer": "b"}\n{"prompt": "c", "answer": \n', 2),
        ("jsonl", '{"prompt": "a", "answer": "b"}\n\n["not", "an", "object"]\n', 3),
        ("csv", "prompt,answer\nOne?,1\nTwo?,2,extra\n", 3),
        ("csv", "question,answer\nOne?,1\n", 1),
    ],
)
def test_import_bad_line_is_422_at_that_line(
    client: TestClient, auth: dict[str, str], content_format: str, content: str, line: int
) -> None:
    body = {"title": "Bad", "format": "qa", "content_format": content_format, "content": content}
    response = client.post("/api/v1/benchmarks/import", json=body, headers=auth)
    error = error_of(response, 422, "invalid_input")
    assert error["details"]["errors"][0]["loc"] == ["body", "content", line]
    assert f"line {line}" in error["message"]
    assert client.get("/api/v1/benchmarks", headers=auth).json()["items"] == []


# --- Changing, freezing -------------------------------------------------------------------------


def test_preview_change_then_patch(client: TestClient, auth: dict[str, str]) -> None:
    bm = create(client, auth, MCQ).json()["benchmark"]["id"]
    change = {
        "title": "Colours v2",
        "questions": [
            {"prompt": "Colour of the sky?", "choices": ["Green", "Blue", "Red"], "answer": "B"},
            {"prompt": "Colour of snow?", "choices": ["White", "Black"], "answer": "A"},
        ],
    }
    preview = client.post(f"/api/v1/benchmarks/{bm}/preview-change", json=change, headers=auth)
    assert preview.status_code == 200, preview.text
    diff = preview.json()
    assert diff["metadata"] == {"title": {"before": "Colours", "after": "Colours v2"}}
    assert (diff["version_before"], diff["version_after"]) == (1, 2)
    assert diff["questions"]["count_after"] == 2
    assert [c["position"] for c in diff["questions"]["changed"]] == [1]
    assert diff["questions"]["changed"][0]["before"]["prompt"] == "Colour of grass?"
    assert diff["questions"]["changed"][0]["after"]["prompt"] == "Colour of snow?"
    # Previewing changed nothing.
    assert client.get(f"/api/v1/benchmarks/{bm}", headers=auth).json()["version"] == 1

    edited = client.patch(f"/api/v1/benchmarks/{bm}", json=change, headers=auth)
    assert edited.status_code == 200, edited.text
    assert edited.json()["benchmark"]["title"] == "Colours v2"
    assert edited.json()["benchmark"]["version"] == 2
    assert edited.json()["change"]["questions"] == diff["questions"]
    prompts = client.get(f"/api/v1/benchmarks/{bm}/questions", headers=auth).json()["items"]
    assert [q["prompt"] for q in prompts] == ["Colour of the sky?", "Colour of snow?"]

    again = client.patch(f"/api/v1/benchmarks/{bm}", json=change, headers=auth)
    error_of(again, 409, "conflict")
    bad = client.patch(
        f"/api/v1/benchmarks/{bm}",
        json={"questions": [{"prompt": "Pick", "choices": ["x"], "answer": "Q"}]},
        headers=auth,
    )
    assert error_of(bad, 422, "invalid_input")["details"]["errors"][0]["loc"][:3] == [
        "body",
        "questions",
        0,
    ]
    unknown = client.patch(f"/api/v1/benchmarks/{bm}", json={"colour": "red"}, headers=auth)
    assert error_of(unknown, 422, "invalid_input")["details"]["errors"][0]["loc"] == [
        "body",
        "colour",
    ]


def test_questions_freeze_after_a_run(
    client: TestClient, auth: dict[str, str], runtime: Runtime
) -> None:
    bm = create(client, auth, MCQ).json()["benchmark"]["id"]
    started = start_run(client, auth, bm)
    assert started.status_code == 202, started.text
    assert client.get(f"/api/v1/benchmarks/{bm}", headers=auth).json()["questions_frozen"]
    new_questions = {"questions": [{"prompt": "Only one?", "choices": ["y", "n"], "answer": "A"}]}
    frozen = client.patch(f"/api/v1/benchmarks/{bm}", json=new_questions, headers=auth)
    details = error_of(frozen, 409, "frozen")["details"]
    assert details["id"] == bm
    # Written as every other time the API gives: ISO 8601, UTC, ending in Z.
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", details["frozen_at"])
    preview = client.post(
        f"/api/v1/benchmarks/{bm}/preview-change", json=new_questions, headers=auth
    )
    error_of(preview, 409, "frozen")
    renamed = client.patch(f"/api/v1/benchmarks/{bm}", json={"title": "Still ok"}, headers=auth)
    assert renamed.status_code == 200 and renamed.json()["benchmark"]["version"] == 1


# --- Runs ---------------------------------------------------------------------------------------


@pytest.mark.both_backends
def test_insufficient_credits_is_402_and_starts_nothing(
    client: TestClient, world: World, runtime: Runtime
) -> None:
    poor = world.user("poor@example.com", credits_=5)
    auth = bearer(world.token(poor, ALL_SCOPES))
    bm = create(client, auth, TWELVE).json()["benchmark"]["id"]
    with StubOpenAI() as stub:
        spec = {
            "name": "Stub",
            "kind": "openai_compat",
            "endpoint_model": "stub",
            "base_url": stub.base_url,
            "api_key": "sk-test-secret-key-123456789012",
            "price_per_question": 2,
            "price_per_1k_tokens": 0,
            "params": {"max_tokens": 16},
        }
        priced = world.do(OPERATOR, models.create_platform_model, spec).id
        estimate = client.get(
            "/api/v1/runs/estimate", params={"benchmark_id": bm, "model_id": priced}, headers=auth
        )
        assert estimate.status_code == 200 and estimate.json()["credits"] == 24
        refused = client.post(
            "/api/v1/runs", json={"benchmark_id": bm, "model_id": priced}, headers=auth
        )
        error = error_of(refused, 402, "insufficient_credits")
        assert error["details"] == {"needed": 24, "balance": 5}
        assert client.get("/api/v1/runs", headers=auth).json()["items"] == []
        assert not client.get(f"/api/v1/benchmarks/{bm}", headers=auth).json()["questions_frozen"]
        assert client.get("/api/v1/me", headers=auth).json()["credits"] == 5
        assert sum(stub.received.values()) == 0


@pytest.mark.both_backends
def test_run_to_results_log_and_export(
    client: TestClient, auth: dict[str, str], runtime: Runtime
) -> None:
    bm = create(client, auth, MCQ).json()["benchmark"]["id"]
    started = start_run(client, auth, bm)
    assert started.status_code == 202, started.text
    run = started.json()
    assert (run["status"], run["question_count"]) == ("queued", 2)
    assert run["door"].startswith("api:tok_")
    error_of(client.post(f"/api/v1/runs/{run['id']}/rescore", headers=auth), 409, "conflict")
    work_all(runtime)

    done = client.get(f"/api/v1/runs/{run['id']}", headers=auth).json()
    assert done["status"] == "completed" and done["done_count"] == 2
    assert done["scores"] == {"accuracy": 0.5} and done["detail_visible"]
    listed = client.get("/api/v1/runs", params={"benchmark_id": bm}, headers=auth).json()
    assert [item["id"] for item in listed["items"]] == [run["id"]]

    page = client.get(f"/api/v1/runs/{run['id']}/results", params={"limit": 1}, headers=auth)
    first = page.json()
    assert first["next_cursor"] and first["items"][0]["outcome"] == "wrong"
    rest = client.get(
        f"/api/v1/runs/{run['id']}/results", params={"cursor": first["next_cursor"]}, headers=auth
    ).json()
    assert rest["next_cursor"] is None and rest["items"][0]["expected"] == "A"

    log = client.get(f"/api/v1/runs/{run['id']}/log", headers=auth).json()["items"]
    assert log[0]["line"].startswith("Queued") and log[-1]["line"].startswith("Completed")
    after = client.get(
        f"/api/v1/runs/{run['id']}/log", params={"after": log[-1]["id"]}, headers=auth
    ).json()
    assert after == {"items": [], "next_cursor": None}
    last = client.get(f"/api/v1/runs/{run['id']}/log", params={"after": 2**31 - 1}, headers=auth)
    assert last.json() == {"items": [], "next_cursor": None}
    beyond = client.get(f"/api/v1/runs/{run['id']}/log", params={"after": 2**31}, headers=auth)
    assert error_of(beyond, 422, "invalid_input")["details"]["errors"][0]["loc"] == [
        "query",
        "after",
    ]

    jsonl = client.get(f"/api/v1/runs/{run['id']}/export", headers=auth)
    assert jsonl.status_code == 200
    assert jsonl.headers["content-type"].startswith("application/x-ndjson")
    assert f'filename="{run["id"]}.jsonl"' in jsonl.headers["content-disposition"]
    assert len(jsonl.text.splitlines()) == 2 and '"expected": "B"' in jsonl.text
    csv = client.get(f"/api/v1/runs/{run['id']}/export", params={"format": "csv"}, headers=auth)
    assert csv.headers["content-type"].startswith("text/csv")
    header, *rows = list(csv_module.reader(io.StringIO(csv.text)))
    assert header[:2] == ["position", "prompt"] and "expected" in header and len(rows) == 2
    assert rows[0][header.index("expected")] == "B"
    bad = client.get(f"/api/v1/runs/{run['id']}/export", params={"format": "xml"}, headers=auth)
    assert error_of(bad, 422, "invalid_input")["details"]["errors"][0]["loc"] == [
        "query",
        "format",
    ]
    missing = client.get("/api/v1/runs/run_doesnotexist/results", headers=auth)
    error_of(missing, 404, "not_found")


@pytest.mark.both_backends
def test_cancel_a_queued_run(client: TestClient, auth: dict[str, str], runtime: Runtime) -> None:
    bm = create(client, auth, MCQ).json()["benchmark"]["id"]
    run = start_run(client, auth, bm).json()
    cancelled = client.post(f"/api/v1/runs/{run['id']}/cancel", headers=auth)
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
    assert cancelled.json()["cost"] == 0
    error_of(client.post(f"/api/v1/runs/{run['id']}/cancel", headers=auth), 409, "conflict")
    assert not Worker(runtime).run_once(), "a cancelled run must not be worked on"


def test_rescore_dry_run_then_apply(
    client: TestClient, auth: dict[str, str], runtime: Runtime
) -> None:
    spec = {
        "title": "Echoed",
        "format": "qa",
        "questions": [
            # The random baseline answers a word of the question; the key, read as a pattern,
            # matches it, read literally it does not.
            {"prompt": "Paris Paris", "answer": "P.ris"},
            {"prompt": "Tokyo Tokyo", "answer": "T.kyo"},
        ],
    }
    bm = create(client, auth, spec).json()["benchmark"]["id"]
    run = start_run(client, auth, bm, RANDOM).json()
    work_all(runtime)
    before = client.get(f"/api/v1/runs/{run['id']}", headers=auth).json()
    assert before["status"] == "completed" and before["scores"] == {"accuracy": 0.0}

    same = client.post(f"/api/v1/runs/{run['id']}/rescore", headers=auth).json()
    assert (same["applied"], same["changed_count"], same["changes"]) == (False, 0, [])

    regex = {"scoring": {"method": "regex"}}
    dry = client.post(f"/api/v1/runs/{run['id']}/rescore", json=regex, headers=auth)
    assert dry.status_code == 200, dry.text
    preview = dry.json()
    assert not preview["applied"] and preview["scoring"]["method"] == "regex"
    assert preview["after"]["accuracy"] == 1.0 and preview["changed_count"] == 2
    assert preview["changes"][0]["after"]["outcome"] == "correct"
    unchanged = client.get(f"/api/v1/runs/{run['id']}", headers=auth).json()
    assert unchanged["scores"] == {"accuracy": 0.0}

    applied = client.post(
        f"/api/v1/runs/{run['id']}/rescore", params={"apply": True}, json=regex, headers=auth
    )
    assert applied.status_code == 200 and applied.json()["applied"]
    after = client.get(f"/api/v1/runs/{run['id']}", headers=auth).json()
    assert after["scores"] == {"accuracy": 1.0} and after["scoring"]["method"] == "regex"

    wrong = client.post(
        f"/api/v1/runs/{run['id']}/rescore", json={"scoring": {"method": "choice"}}, headers=auth
    )
    assert error_of(wrong, 422, "invalid_input")["details"]["errors"][0]["loc"] == [
        "body",
        "scoring",
        "method",
    ]


# --- Models and credentials ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "http://10.0.0.5/v1",
        "http://169.254.169.254/latest",
        "http://[::1]/v1",
        "http://127.0.0.2/v1",
    ],
)
def test_model_on_a_private_address_is_422(
    client: TestClient, auth: dict[str, str], url: str
) -> None:
    spec = {"name": "Mine", "endpoint_model": "m", "base_url": url}
    error = error_of(client.post("/api/v1/models", json=spec, headers=auth), 422, "invalid_input")
    assert error["details"]["errors"][0]["loc"] == ["body", "base_url"]
    mine = [m for m in client.get("/api/v1/models", headers=auth).json()["items"]]
    assert all(m["owner"] == "platform" for m in mine)


def test_model_keys_go_in_and_never_come_out(
    client: TestClient, auth: dict[str, str], world: World
) -> None:
    key, rotated = "sk-very-secret-value-0123456789", "sk-rotated-secret-9876543210"
    spec = {
        "name": "Mine",
        "endpoint_model": "m",
        "base_url": "http://127.0.0.1:9/v1",
        "api_key": key,
    }
    # Users never price their own endpoints: a price is refused, not dropped.
    priced = client.post("/api/v1/models", json={**spec, "price_per_question": 50}, headers=auth)
    assert error_of(priced, 422, "invalid_input")["details"]["errors"][0]["loc"] == [
        "body",
        "price_per_question",
    ]
    made = client.post("/api/v1/models", json=spec, headers=auth)
    assert made.status_code == 201, made.text
    model = made.json()
    assert model["has_api_key"] and model["owner"] == "you"
    assert model["price_per_question"] == 0
    assert "api_key" not in model
    responses = [
        made,
        client.get("/api/v1/models", headers=auth),
        client.get(f"/api/v1/models/{model['id']}", headers=auth),
        client.patch(f"/api/v1/models/{model['id']}", json={"api_key": rotated}, headers=auth),
        client.get(f"/api/v1/models/{model['id']}", headers=auth),
    ]
    for response in responses:
        assert response.status_code in (200, 201)
        assert key not in response.text and rotated not in response.text
        assert "sk-" not in response.text
    removed = client.patch(f"/api/v1/models/{model['id']}", json={"api_key": ""}, headers=auth)
    assert removed.status_code == 200 and not removed.json()["has_api_key"]
    local = {**spec, "kind": "local_gguf"}
    error = error_of(client.post("/api/v1/models", json=local, headers=auth), 422, "invalid_input")
    assert error["details"]["errors"][0]["loc"] == ["body", "kind"]
    bob = bearer(world.token(world.user("bob@example.com"), ALL_SCOPES))
    error_of(client.get(f"/api/v1/models/{model['id']}", headers=bob), 404, "not_found")


def test_turn_credentials_get_401_everywhere(
    client: TestClient, world: World, ana: str, auth: dict[str, str]
) -> None:
    bm = create(client, auth, QA).json()["benchmark"]["id"]
    parent = world.api(auth["Authorization"].removeprefix("Bearer "))
    secret = world.do(
        parent, tokens.mint_turn_credential, "turn_api", frozenset(Scope), timedelta(minutes=5)
    )
    assert secret.startswith("bga_")
    for method, path in [
        ("GET", "/api/v1/me"),
        ("GET", f"/api/v1/benchmarks/{bm}"),
        ("POST", f"/api/v1/benchmarks/{bm}/publish"),
        ("GET", "/api/v1/models"),
    ]:
        response = client.request(method, path, headers=bearer(secret))
        error_of(response, 401, "unauthenticated")
        assert response.headers["WWW-Authenticate"] == "Bearer"
    assert client.get(f"/api/v1/benchmarks/{bm}", headers=auth).json()["visibility"] == "private"


# --- Input no database can hold, paging, the spec ---------------------------------------------


@pytest.mark.both_backends
@pytest.mark.parametrize(
    ("method", "path", "body", "loc"),
    [
        ("POST", "/api/v1/benchmarks", {**QA, "title": "Nul\x00"}, ["body", "title"]),
        (
            "POST",
            "/api/v1/benchmarks",
            {**QA, "questions": [{"prompt": "a", "answer": "b", "tags": ["t\x00"]}]},
            ["body", "questions", 0, "tags", 0],
        ),
        ("GET", "/api/v1/benchmarks?search=x%00", None, ["query", "search"]),
        ("GET", "/api/v1/benchmarks/bm_%00", None, ["path", "benchmark_id"]),
        ("GET", "/api/v1/runs?benchmark_id=%00", None, ["query", "benchmark_id"]),
        ("POST", "/api/v1/models", {"name": "n\x00", "endpoint_model": "m"}, ["body", "name"]),
    ],
)
def test_nul_characters_are_invalid_input(
    client: TestClient,
    auth: dict[str, str],
    method: str,
    path: str,
    body: dict[str, Any] | None,
    loc: list[str | int],
) -> None:
    """PostgreSQL text cannot hold NUL: refused up front, on every backend alike."""
    error = error_of(client.request(method, path, json=body, headers=auth), 422, "invalid_input")
    assert error["details"]["errors"][0]["loc"] == loc
    assert client.get("/api/v1/benchmarks", headers=auth).json()["items"] == []


@pytest.mark.parametrize("number", [b"NaN", b"Infinity", b"-Infinity", b"1e999"])
def test_non_finite_numbers_are_invalid_input(
    client: TestClient, auth: dict[str, str], number: bytes
) -> None:
    body = (
        b'{"title": "ok", "format": "qa", "questions": '
        b'[{"prompt": "a", "answer": "b", "metadata": {"score": ' + number + b"}}]}"
    )
    headers = {**auth, "Content-Type": "application/json"}
    response = client.post("/api/v1/benchmarks", content=body, headers=headers)
    error = error_of(response, 422, "invalid_input")
    assert error["details"]["errors"][0]["loc"] == ["body", "questions", 0, "metadata", "score"]


def test_a_body_that_is_not_utf8_is_invalid_input(client: TestClient, auth: dict[str, str]) -> None:
    headers = {**auth, "Content-Type": "application/json"}
    response = client.post("/api/v1/benchmarks", content=b'{"title": "\xff"}', headers=headers)
    assert error_of(response, 422, "invalid_input")["details"]["errors"][0]["loc"] == ["body"]


@pytest.mark.both_backends
def test_credit_ledger_pages(
    client: TestClient, world: World, ana: str, clock: ManualClock
) -> None:
    for amount in (10, 20, 30):
        clock.advance(seconds=1)
        world.do(OPERATOR, credits.grant_credits, ana, amount)
    auth = bearer(world.token(ana, ["read"]))
    whole = client.get("/api/v1/credits", params={"limit": 500}, headers=auth)
    assert whole.status_code == 200, whole.text
    assert [line["amount"] for line in whole.json()["items"]] == [30, 20, 10, 100]
    assert whole.json()["next_cursor"] is None
    seen, cursor = [], None
    while True:
        params = {"limit": 3, **({"cursor": cursor} if cursor else {})}
        page = client.get("/api/v1/credits", params=params, headers=auth).json()
        seen += [line["amount"] for line in page["items"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == [30, 20, 10, 100]
    exact = client.get("/api/v1/credits", params={"limit": 4}, headers=auth).json()
    assert exact["next_cursor"] is None, "a last page that is full has no next page"
    # Unknown, or another list's (longer than a ledger id): said the same as every list says.
    another = "MTc2NzIyNTYwMC4wfHJ1bl94eHh4eHh4eHh4eHh4eHh4eHh4eHh4.deadbeefdeadbeef"
    for cursor in ("cr_nope", another):
        bad = client.get("/api/v1/credits", params={"cursor": cursor}, headers=auth)
        (error,) = error_of(bad, 422, "invalid_input")["details"]["errors"]
        assert error["loc"] == ["query", "cursor"]
        assert error["msg"] == "not a cursor from a previous page", error


def test_openapi_documents_the_error_envelope(client: TestClient) -> None:
    spec = client.get("/api/v1/openapi.json").json()
    envelope = {"$ref": "#/components/schemas/ErrorEnvelope"}
    for path, operations in spec["paths"].items():
        if not path.startswith("/api/v1/"):
            continue
        for method, operation in operations.items():
            for status in ("401", "403", "404", "422"):
                content = operation["responses"][status]["content"]["application/json"]
                assert content["schema"] == envelope, (method, path, status)
    create = spec["paths"]["/api/v1/benchmarks"]["post"]["responses"]
    assert "Retry-After" in create["429"]["headers"]
    assert {"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"} <= set(
        create["201"]["headers"]
    )
    assert "402" in spec["paths"]["/api/v1/runs"]["post"]["responses"]
    # Every route that launches a run counts toward the strangers' daily quota on it.
    for path in ("/runs", "/runs/{run_id}/retry", "/benchmarks/{benchmark_id}/submissions"):
        limited = spec["paths"][f"/api/v1{path}"]["post"]["responses"]
        assert "Retry-After" in limited["429"]["headers"], path
    assert "HTTPValidationError" not in spec["components"]["schemas"]


# --- The creation limit -------------------------------------------------------------------------


def _burst(client: TestClient, auth: dict[str, str], count: int) -> list[Response]:
    """`count` threads POST a benchmark at the same moment."""
    barrier = threading.Barrier(count)
    responses: list[Response] = []
    lock = threading.Lock()

    def one() -> None:
        barrier.wait()
        response = create(client, auth)
        with lock:
            responses.append(response)

    threads = [threading.Thread(target=one) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert len(responses) == count
    return responses


@pytest.mark.both_backends
def test_concurrent_creations_three_per_minute(
    client: TestClient, auth: dict[str, str], clock: ManualClock
) -> None:
    responses = _burst(client, auth, 8)
    created = [r for r in responses if r.status_code == 201]
    refused = [r for r in responses if r.status_code != 201]
    assert len(created) == 3, [r.text for r in responses]
    assert sorted(r.headers["X-RateLimit-Remaining"] for r in created) == ["0", "1", "2"]
    reset = str(int((clock.now() + timedelta(minutes=1)).timestamp()))
    assert {(r.headers["X-RateLimit-Limit"], r.headers["X-RateLimit-Reset"]) for r in created} == {
        ("3", reset)
    }
    for response in refused:
        error = error_of(response, 429, "rate_limited")
        assert response.headers["Retry-After"] == "60"
        assert (error["details"]["limit"], error["details"]["window"]) == (3, "minute")
    listed = client.get("/api/v1/benchmarks", params={"mine": True}, headers=auth).json()
    assert len(listed["items"]) == 3

    clock.advance(seconds=45)
    later = create(client, auth)
    error_of(later, 429, "rate_limited")
    assert later.headers["Retry-After"] == "15"
    clock.advance(seconds=15)
    assert create(client, auth).status_code == 201


@pytest.mark.both_backends
def test_the_reset_header_is_never_before_the_room_comes_back(
    client: TestClient, auth: dict[str, str], clock: ManualClock
) -> None:
    clock.advance(seconds=0.4)
    for _ in range(3):
        response = create(client, auth)
        assert response.status_code == 201, response.text
    reset = int(response.headers["X-RateLimit-Reset"])
    assert reset == int((clock.now() + timedelta(minutes=1)).timestamp()) + 1
    clock.advance(seconds=reset - clock.now().timestamp())  # a client that slept until then
    assert create(client, auth).status_code == 201


def test_ten_per_day_then_retry_after_the_oldest(
    client: TestClient, auth: dict[str, str], clock: ManualClock
) -> None:
    first = clock.now()
    for made in range(10):
        if made and made % 3 == 0:
            clock.advance(minutes=1)
        response = create(client, auth)
        assert response.status_code == 201, response.text
    # The tenth: the day window is now the tighter one.
    assert response.headers["X-RateLimit-Limit"] == "10"
    assert response.headers["X-RateLimit-Remaining"] == "0"
    day_later = first + timedelta(days=1)
    assert response.headers["X-RateLimit-Reset"] == str(int(day_later.timestamp()))
    clock.advance(minutes=5)
    refused = create(client, auth)
    error = error_of(refused, 429, "rate_limited")
    assert (error["details"]["limit"], error["details"]["window"]) == (10, "day")
    wait = timedelta(days=1) - timedelta(minutes=8)
    assert refused.headers["Retry-After"] == str(int(wait.total_seconds()))
    imported = client.post(
        "/api/v1/benchmarks/import",
        json={"title": "Also counted", "format": "qa", "content": '{"prompt": "a", "answer": "b"}'},
        headers=auth,
    )
    error_of(imported, 429, "rate_limited")
    clock.advance(seconds=wait.total_seconds())
    assert create(client, auth).status_code == 201


def test_a_stranger_sees_the_runs_left_today_and_the_owner_is_not_limited(
    client: TestClient, auth: dict[str, str], world: World
) -> None:
    bm = create(client, auth, MCQ).json()["benchmark"]["id"]
    assert client.post(f"/api/v1/benchmarks/{bm}/publish", headers=auth).status_code == 200
    assert client.get(f"/api/v1/benchmarks/{bm}/run-quota", headers=auth).json() is None
    sam = bearer(world.token(world.user("sam@example.com", credits_=100), ALL_SCOPES))
    before = client.get(f"/api/v1/benchmarks/{bm}/run-quota", headers=sam).json()
    assert before["limit"] == 5 and before["remaining"] == 5 and before["window"] == "day"
    assert start_run(client, sam, bm).status_code == 202
    after = client.get(f"/api/v1/benchmarks/{bm}/run-quota", headers=sam).json()
    assert after["remaining"] == 4
