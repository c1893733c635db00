"""`/api/v1/datasets`: multipart uploads with line-numbered problems, paging, owner-only reads,
the train scope and the dataset size limit."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from benchgen.app import create_app
from benchgen.services.runtime import Runtime
from tests.support import World

PAIR = {"prompt": "Capital of France?", "completion": "Paris"}


@pytest.fixture
def client(runtime: Runtime) -> Iterator[TestClient]:
    runtime.settings = runtime.settings.model_copy(update={"max_dataset_bytes": 4096})
    with TestClient(create_app(runtime.settings, runtime)) as test_client:
        yield test_client


def _auth(world: World, user: str, scopes: list[str]) -> dict[str, str]:
    return {"Authorization": f"Bearer {world.token(user, scopes)}"}


def _upload(client: TestClient, headers: dict[str, str], data: bytes, **form: str) -> object:
    files = {"file": ("data.jsonl", data, "application/x-ndjson")}
    return client.post("/api/v1/datasets", headers=headers, files=files, data={"name": "D", **form})


def test_upload_list_page_and_read(client: TestClient, world: World) -> None:
    ana = world.user("ana@example.com")
    headers = _auth(world, ana, ["read", "train"])
    ids = []
    for _ in range(3):
        made = _upload(client, headers, (json.dumps(PAIR) + "\n").encode())
        assert made.status_code == 201, made.text
        ids.append(made.json()["id"])
    first = client.get("/api/v1/datasets", headers=headers, params={"limit": 2}).json()
    assert len(first["items"]) == 2 and first["next_cursor"]
    rest = client.get(
        "/api/v1/datasets", headers=headers, params={"limit": 2, "cursor": first["next_cursor"]}
    ).json()
    assert rest["next_cursor"] is None
    assert {d["id"] for d in first["items"] + rest["items"]} == set(ids)
    one = client.get(f"/api/v1/datasets/{ids[0]}", headers=headers).json()
    assert one["preview"] == [PAIR] and one["token_estimate"] == 6


def test_bad_rows_come_back_with_their_lines(client: TestClient, world: World) -> None:
    ana = world.user("ana@example.com")
    headers = _auth(world, ana, ["read", "train"])
    bad = b'{"messages": [{"role": "user", "content": "hi"}]}\n'
    answer = _upload(client, headers, bad, format="chat")
    assert answer.status_code == 422
    problem = answer.json()["error"]["details"]["errors"][0]
    assert problem["loc"] == ["body", "file", 1, "messages"]
    assert client.get("/api/v1/datasets", headers=headers).json()["items"] == []
    mapped = _upload(client, headers, b"{}", mapping="{not json")
    assert mapped.status_code == 422


def test_scope_owner_and_size(client: TestClient, world: World) -> None:
    ana, bob = world.user("ana@example.com"), world.user("bob@example.com")
    reader = _auth(world, ana, ["read"])
    assert _upload(client, reader, json.dumps(PAIR).encode()).status_code == 403
    made = _upload(client, _auth(world, ana, ["train"]), json.dumps(PAIR).encode()).json()
    assert client.get(f"/api/v1/datasets/{made['id']}", headers=reader).status_code == 200
    other = _auth(world, bob, ["read", "train"])
    assert client.get(f"/api/v1/datasets/{made['id']}", headers=other).status_code == 404
    big = (json.dumps(PAIR) + "\n").encode() * 200
    answer = _upload(client, _auth(world, ana, ["train"]), big)
    assert answer.status_code in (413, 422)


@pytest.mark.parametrize(
    ("data", "loc", "start"),
    [
        (
            b"prompt;completion\nhi;there\na;b\n",
            ["body", "file", 1],
            "the header needs the columns",
        ),
        (
            b"prompt,completion,prompt\nhi,there,x\n",
            ["body", "file", 1],
            "the column 'prompt' appears",
        ),
        (
            b"prompt,completion\nhi,there\ncaf\xe9,x\n",
            ["body", "file", 3],
            "not UTF-8 text at column 4",
        ),
    ],
)
def test_a_bad_header_or_encoding_is_one_problem_at_its_line(
    client: TestClient, world: World, data: bytes, loc: list[object], start: str
) -> None:
    headers = _auth(world, world.user("ana@example.com"), ["train"])
    files = {"file": ("d.csv", data, "text/csv")}
    answer = client.post("/api/v1/datasets", headers=headers, files=files, data={"name": "D"})
    assert answer.status_code == 422
    [problem] = answer.json()["error"]["details"]["errors"]
    assert problem["loc"] == loc and problem["msg"].startswith(start)


def test_a_mapping_with_a_number_past_the_digit_limit_is_refused(
    client: TestClient, world: World
) -> None:
    ana = world.user("ana@example.com")
    headers = _auth(world, ana, ["read", "train"])
    mapping = '{"prompt": %s}' % ("1" * 5000)
    answer = _upload(client, headers, (json.dumps(PAIR) + "\n").encode(), mapping=mapping)
    assert answer.status_code == 422, answer.text
    problem = answer.json()["error"]["details"]["errors"][0]
    assert problem["loc"] == ["body", "mapping"] and "too many digits" in problem["msg"]
    assert client.get("/api/v1/datasets", headers=headers).json()["items"] == []


def test_a_file_part_without_a_file_name_is_said_to_need_one(
    client: TestClient, world: World
) -> None:
    """`curl -F 'file=<data.jsonl'` sends the file's text as a plain form field."""
    headers = _auth(world, world.user("ana@example.com"), ["train"])
    files = {"file": (None, b'{"prompt": "hi", "completion": "there"}\n')}
    answer = client.post("/api/v1/datasets", headers=headers, files=files, data={"name": "D"})
    assert answer.status_code == 422
    [problem] = answer.json()["error"]["details"]["errors"]
    assert problem["loc"] == ["body", "file"]
    assert problem["msg"].startswith("must be a file: send it as a multipart part with a file name")
