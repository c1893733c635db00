"""Formats in and out through HTTP: multipart imports with presets and mappings, their row-numbered
errors and limits, and exports as attachments for the benchmark's team only."""

from __future__ import annotations

import io
import json
import os
import zipfile
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from fastapi.testclient import TestClient
from httpx import Response

from benchgen.app import create_app
from benchgen.core.context import Principal
from benchgen.core.permissions import RULES, Action, Scope
from benchgen.services.benchmarks import lifecycle
from benchgen.services.runtime import Runtime
from tests.support import MCQ, World

ALL = ["read", "runs", "create", "edit", "publish"]
IMPORT = "/api/v1/benchmarks/import/file"
INSPECT_ROWS = [
    {"input": "Capital of France?", "target": "Paris", "id": "s1"},
    {"input": "Capital of Japan?", "target": ["Tokyo", "Tōkyō"], "id": "s2"},
]
MMLU_CSV = (
    "question,A,B,C,D,answer,subject\n2+2?,3,4,5,6,B,math\nRed+blue?,Purple,Green,Blue,Red,A,art\n"
)


def bearer(world: World, user_id: str, scopes: list[str] = ALL) -> dict[str, str]:
    return {"Authorization": f"Bearer {world.token(user_id, scopes)}"}


def jsonl(rows: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(row) + "\n" for row in rows).encode()


def parquet(rows: list[dict[str, Any]]) -> bytes:
    sink = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows), sink)
    return sink.getvalue()


def send(
    client: TestClient, headers: dict[str, str], data: bytes, name: str, **fields: str
) -> Response:
    form = {"title": "Imported", **fields}
    files = {"file": (name, data, "application/octet-stream")}
    return client.post(IMPORT, data=form, files=files, headers=headers)


def questions(client: TestClient, headers: dict[str, str], bm: str) -> list[dict[str, Any]]:
    answer = client.get(f"/api/v1/benchmarks/{bm}/questions", headers=headers)
    assert answer.status_code == 200, answer.text
    items: list[dict[str, Any]] = answer.json()["items"]
    return items


def mine(world: World, user_id: str) -> list[Any]:
    return world.do(Principal.web(user_id), lifecycle.list_benchmarks, True)


def test_inspect_jsonl_through_the_preset(client: TestClient, world: World) -> None:
    ana = bearer(world, world.user("ana@example.com"))
    answer = send(client, ana, jsonl(INSPECT_ROWS), "samples.jsonl", preset="inspect")
    assert answer.status_code == 201, answer.text
    body = answer.json()
    assert body["benchmark"]["format"] == "qa" and body["benchmark"]["question_count"] == 2
    assert body["warnings"] == []
    assert "X-RateLimit-Remaining" in answer.headers
    got = questions(client, ana, body["benchmark"]["id"])
    assert [q["answer"] for q in got] == [["Paris"], ["Tokyo", "Tōkyō"]]


def test_mmlu_style_csv_with_a_mapping(client: TestClient, world: World) -> None:
    ana = bearer(world, world.user("ana@example.com"))
    mapping = {"prompt": "question", "choices": ["A", "B", "C", "D"], "tags": "subject"}
    answer = send(client, ana, MMLU_CSV.encode(), "mmlu.csv", mapping=json.dumps(mapping))
    assert answer.status_code == 201, answer.text
    created = answer.json()["benchmark"]
    assert created["format"] == "mcq"
    got = questions(client, ana, created["id"])
    assert [(q["answer"], q["tags"]) for q in got] == [("B", ["math"]), ("A", ["art"])]
    assert got[0]["choices"] == {"A": "3", "B": "4", "C": "5", "D": "6"}


def test_lm_eval_parquet_through_the_preset(client: TestClient, world: World) -> None:
    ana = bearer(world, world.user("ana@example.com"))
    rows = [
        {"question": "2+2?", "subject": "math", "choices": ["3", "4", "5", "6"], "answer": 1},
        {"question": "Sky?", "subject": "nature", "choices": ["Green", "Blue"], "answer": 1},
    ]
    answer = send(
        client, ana, parquet(rows), "test-00000.parquet", preset="lm_eval_mcq", format="mcq"
    )
    assert answer.status_code == 201, answer.text
    got = questions(client, ana, answer.json()["benchmark"]["id"])
    assert [(q["answer"], q["tags"]) for q in got] == [("B", ["math"]), ("B", ["nature"])]


def test_bad_rows_are_422_with_their_numbers_and_nothing_is_created(
    client: TestClient, world: World
) -> None:
    ana_id = world.user("ana@example.com")
    ana = bearer(world, ana_id)
    rows = [
        {"question": "ok?", "choices": ["a", "b"], "answer": 0},
        {"question": "bad index?", "choices": ["a", "b"], "answer": 5},
        {"choices": ["a", "b"], "answer": 1},
    ]
    answer = send(client, ana, jsonl(rows), "x.jsonl", preset="lm_eval_mcq")
    assert answer.status_code == 422, answer.text
    error = answer.json()["error"]
    assert error["code"] == "invalid_input" and error["message"].startswith("line 2.answer")
    places = [problem["loc"] for problem in error["details"]["errors"]]
    assert places == [["body", "file", 2, "answer"], ["body", "file", 3, "prompt"]]
    in_parquet = send(client, ana, parquet([{"input": "a?", "target": None}]), "x.parquet")
    assert in_parquet.status_code == 422
    assert in_parquet.json()["error"]["message"].startswith("row 1")
    not_json = send(client, ana, jsonl(INSPECT_ROWS), "x.jsonl", mapping="{oops")
    assert not_json.status_code == 422
    assert not_json.json()["error"]["details"]["errors"][0]["loc"] == ["body", "mapping"]
    unknown = send(client, ana, jsonl(INSPECT_ROWS), "x.jsonl", mapping='{"question": "x"}')
    assert unknown.status_code == 422
    assert mine(world, ana_id) == []


def test_a_token_without_the_create_scope_gets_403(client: TestClient, world: World) -> None:
    ana_id = world.user("ana@example.com")
    reader = bearer(world, ana_id, ["read", "runs"])
    answer = send(client, reader, jsonl(INSPECT_ROWS), "x.jsonl", preset="inspect")
    assert answer.status_code == 403, answer.text
    assert answer.json()["error"]["code"] == "permission_denied"
    assert mine(world, ana_id) == []


def test_a_body_over_the_import_limit_is_413(runtime: Runtime, world: World) -> None:
    runtime.settings = runtime.settings.model_copy(update={"max_import_bytes": 1024})
    ana_id = world.user("ana@example.com")
    ana = bearer(world, ana_id)
    with TestClient(create_app(runtime.settings, runtime)) as small:
        answer = send(small, ana, os.urandom(200 * 1024), "big.jsonl")
        assert answer.status_code == 413, answer.text
        assert answer.json()["error"]["code"] == "too_large"
        # Within the slack the body limit gives the form, the file itself is still measured.
        over = send(small, ana, b'{"prompt": "x", "answer": "y"}\n' * 40, "big.jsonl")
        assert over.status_code == 422, over.text
        assert over.json()["error"]["details"]["errors"][0]["loc"] == ["body", "file"]
    assert mine(world, ana_id) == []


# ---------------------------------------------------------------- export


EXPECTED = {
    "jsonl": ("application/x-ndjson", ".jsonl"),
    "inspect": ("application/zip", "_inspect.zip"),
    "lm_eval": ("application/zip", "_lm_eval.zip"),
}


@pytest.mark.parametrize("fmt", list(EXPECTED))
def test_the_team_gets_each_format_as_an_attachment(
    client: TestClient, world: World, fmt: str
) -> None:
    ana_id, bob_id = world.user("ana@example.com"), world.user("bob@example.com")
    bm = world.benchmark(ana_id, MCQ)
    world.collaborator(ana_id, bm, "bob@example.com")
    for who in (ana_id, bob_id):
        answer = client.get(
            f"/api/v1/benchmarks/{bm}/export", params={"format": fmt}, headers=bearer(world, who)
        )
        assert answer.status_code == 200, answer.text
        media, suffix = EXPECTED[fmt]
        assert answer.headers["content-type"].startswith(media)
        assert answer.headers["x-content-type-options"] == "nosniff"
        disposition = answer.headers["content-disposition"]
        assert disposition.startswith("attachment;") and disposition.endswith(f'{suffix}"')
        if fmt == "jsonl":
            rows = [json.loads(line) for line in answer.text.splitlines()]
            assert [row["answer"] for row in rows] == ["B", "A"]
        else:
            with zipfile.ZipFile(io.BytesIO(answer.content)) as archive:
                assert any(name.endswith("/dataset.jsonl") for name in archive.namelist())


def test_a_stranger_gets_404_then_403_once_published(client: TestClient, world: World) -> None:
    ana_id = world.user("ana@example.com")
    ana, bob = bearer(world, ana_id), bearer(world, world.user("bob@example.com"))
    bm = world.benchmark(ana_id, MCQ)
    path = f"/api/v1/benchmarks/{bm}/export"
    hidden = client.get(path, params={"format": "inspect"}, headers=bob)
    assert hidden.status_code == 404  # private: he may not know it exists
    assert client.post(f"/api/v1/benchmarks/{bm}/publish", headers=ana).status_code == 200
    refused = client.get(path, params={"format": "inspect"}, headers=bob)
    assert refused.status_code == 403  # published: he sees it, never its key
    assert refused.json()["error"]["code"] == "permission_denied"
    unknown = client.get(path, params={"format": "yaml"}, headers=ana)
    assert unknown.status_code == 422


def test_a_read_scope_token_of_the_owner_can_export(client: TestClient, world: World) -> None:
    # Exporting is seeing the key, which a token delegates with the read scope.
    assert RULES[Action.BENCHMARK_READ_KEY].scope is Scope.READ
    ana_id = world.user("ana@example.com")
    bm = world.benchmark(ana_id, MCQ)
    reader = bearer(world, ana_id, ["read"])
    answer = client.get(f"/api/v1/benchmarks/{bm}/export", headers=reader)
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-disposition"] == f'attachment; filename="{bm}.jsonl"'
