"""Request bodies are strict: an unknown or misspelt field is a 422, never silently dropped, and a
boolean is JSON true or false, never "yes"."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from benchgen.api.form_bodies import form_shape
from benchgen.jobs.worker import Worker
from benchgen.services.runtime import Runtime
from tests.support import QA, World, flat_routes

SCOPES = ["read", "runs", "create", "edit"]
RANDOM = "mdl_builtin_random"


@pytest.fixture
def ana(world: World) -> tuple[dict[str, str], str]:
    """Ana's bearer header (10 credits) and a qa benchmark of hers."""
    user = world.user("ana@example.com", credits_=10)
    return {"Authorization": f"Bearer {world.token(user, SCOPES)}"}, world.benchmark(user, QA)


def _refused_at(answer: Any) -> list[list[Any]]:
    assert answer.status_code == 422, answer.text
    return [problem["loc"] for problem in answer.json()["error"]["details"]["errors"]]


def test_every_json_body_refuses_unknown_fields(client: TestClient) -> None:
    """`StartRun` lacked this: `max_credit` (for `max_credits`) ran the whole benchmark uncapped."""
    document = client.get("/api/v1/openapi.json").json()
    schemas = document["components"]["schemas"]
    open_bodies = []
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            content = operation.get("requestBody", {}).get("content", {})
            schema = content.get("application/json", {}).get("schema")
            if schema is None:
                continue
            for option in schema.get("anyOf", [schema]):
                name = option.get("$ref", "").rsplit("/", 1)[-1]
                if name and schemas[name].get("additionalProperties") is not False:
                    open_bodies.append(f"{method.upper()} {path}: {name}")
    assert open_bodies == []


@pytest.mark.parametrize("path", ["/api/v1/runs", "/api/v1/runs/estimate"])
def test_a_misspelt_spending_cap_is_refused_not_ignored(
    client: TestClient, ana: tuple[dict[str, str], str], path: str
) -> None:
    auth, bm = ana
    body = {"benchmark_id": bm, "model_id": RANDOM, "max_credit": 1}
    assert _refused_at(client.post(path, json=body, headers=auth)) == [["body", "max_credit"]]
    assert client.get("/api/v1/runs", headers=auth).json()["items"] == []


def test_apply_in_a_rescore_body_is_refused_not_a_silent_dry_run(
    client: TestClient, runtime: Runtime, ana: tuple[dict[str, str], str]
) -> None:
    auth, bm = ana
    body = {"benchmark_id": bm, "model_id": RANDOM}
    run = client.post("/api/v1/runs", json=body, headers=auth).json()
    worker = Worker(runtime)
    while worker.run_once():
        pass
    url = f"/api/v1/runs/{run['id']}/rescore"
    misplaced = client.post(url, json={"apply": True}, headers=auth)
    assert _refused_at(misplaced) == [["body", "apply"]]
    dry = client.post(url, json={"scoring": {"method": "f1"}}, headers=auth)
    assert dry.status_code == 200 and dry.json()["applied"] is False
    assert client.post(url, headers=auth).status_code == 200  # no body: the run's own scoring


@pytest.mark.parametrize("word", ["yes", "on", "1", "true", 1])
def test_body_booleans_are_json_true_or_false(
    client: TestClient, ana: tuple[dict[str, str], str], word: object
) -> None:
    auth, bm = ana
    run = {"benchmark_id": bm, "model_id": RANDOM, "cache": word}
    assert _refused_at(client.post("/api/v1/runs", json=run, headers=auth)) == [["body", "cache"]]
    mail = client.put("/api/v1/me/notifications", json={"email_on_finish": word}, headers=auth)
    assert _refused_at(mail) == [["body", "email_on_finish"]]
    rotate = client.put("/api/v1/me/notifications", json={"rotate_secret": word}, headers=auth)
    assert _refused_at(rotate) == [["body", "rotate_secret"]]
    assert client.get("/api/v1/me/notifications", headers=auth).json()["email_on_finish"] is False


@pytest.mark.parametrize("word", ["yes", "on", "true"])
def test_a_scoring_option_is_never_a_word_read_as_true(
    client: TestClient, ana: tuple[dict[str, str], str], word: str
) -> None:
    auth, bm = ana
    url = f"/api/v1/benchmarks/{bm}/scoring"
    body = {"method": "includes", "options": {"number_words": word}}
    assert client.put(url, json=body, headers=auth).status_code == 422
    assert client.get(url, headers=auth).json()["method"] == "exact"


def test_a_key_given_twice_is_refused_at_its_name(
    client: TestClient, ana: tuple[dict[str, str], str]
) -> None:
    """The last value silently won: `"max_credits": null` after a cap ran the run uncapped."""
    auth, bm = ana
    headers = {**auth, "Content-Type": "application/json"}
    twice = (
        f'{{"benchmark_id": "{bm}", "model_id": "{RANDOM}", "max_credits": 1, "max_credits": null}}'
    )
    answer = client.post("/api/v1/runs", content=twice, headers=headers)
    assert _refused_at(answer) == [["body", "max_credits"]]
    assert "max_credits" in answer.json()["error"]["message"]
    nested = '{"method": "includes", "options": {"case": true, "case": false}}'
    scoring = client.put(f"/api/v1/benchmarks/{bm}/scoring", content=nested, headers=headers)
    assert _refused_at(scoring) == [["body", "options", "case"]]
    assert client.get("/api/v1/runs", headers=auth).json()["items"] == []
    # Without a valid token, that is not explained: 401 comes first, as for any bad body.
    anonymous = {"Content-Type": "application/json"}
    assert client.post("/api/v1/runs", content=twice, headers=anonymous).status_code == 401


# Every route that takes a multipart form: its file fields, and a value for some others.
FORMS: dict[str, tuple[set[str], dict[str, str]]] = {
    "/api/v1/benchmarks/bundles": ({"bundle"}, {}),
    "/api/v1/benchmarks/{benchmark_id}/bundle": ({"bundle"}, {}),
    "/api/v1/benchmarks/{benchmark_id}/submissions": ({"submission"}, {"kind": "auto"}),
    "/api/v1/benchmarks/import/file": ({"file"}, {"title": "T"}),
    "/api/v1/datasets": ({"file"}, {"name": "D"}),
}
ROWS = b'{"prompt": "Q", "completion": "A"}\n'


def test_the_form_routes_are_these(client: TestClient) -> None:
    taking_forms = {
        path
        for path, route in flat_routes(client.app)  # type: ignore[arg-type]
        if path.startswith("/api/v1") and form_shape(route.endpoint).fields
    }
    assert taking_forms == set(FORMS)


def _form_post(client: TestClient, path: str, bm: str, auth: dict[str, str]) -> Any:
    """A form `path` takes, with a misspelt `format` added."""
    names, fields = FORMS[path]
    files = {name: (f"{name}.jsonl", ROWS, "application/octet-stream") for name in names}
    data = {**fields, "fromat": "jsonl"}
    return client.post(path.replace("{benchmark_id}", bm), headers=auth, files=files, data=data)


@pytest.mark.parametrize("path", sorted(FORMS))
def test_every_form_refuses_a_misspelt_field_and_changes_nothing(
    client: TestClient, world: World, path: str
) -> None:
    user = world.user("ana@example.com", credits_=10)
    auth = {"Authorization": f"Bearer {world.token(user, [*SCOPES, 'train'])}"}
    bm = world.benchmark(user, QA)
    answer = _form_post(client, path, bm, auth)
    assert answer.status_code == 422, answer.text
    (problem,) = answer.json()["error"]["details"]["errors"]
    assert problem["loc"] == ["body", "fromat"]
    assert problem["msg"].startswith("not a field of this form; it takes ")
    assert "fromat" in answer.json()["error"]["message"]
    assert client.get("/api/v1/datasets", headers=auth).json()["items"] == []
    assert [b["id"] for b in client.get("/api/v1/benchmarks", headers=auth).json()["items"]] == [bm]
    assert client.get("/api/v1/runs", headers=auth).json()["items"] == []
    # Without a valid token, the token is what is wrong (the form's fields stay unexplained).
    assert _form_post(client, path, bm, {}).status_code == 401


def test_a_form_field_given_twice_is_refused(client: TestClient, world: World) -> None:
    user = world.user("ana@example.com")
    auth = {"Authorization": f"Bearer {world.token(user, ['read', 'train'])}"}
    files = [
        ("file", ("d.jsonl", ROWS, "application/octet-stream")),
        ("name", (None, b"First")),
        ("name", (None, b"Second")),
    ]
    answer = client.post("/api/v1/datasets", headers=auth, files=files)
    assert _refused_at(answer) == [["body", "name"]]
    assert client.get("/api/v1/datasets", headers=auth).json()["items"] == []
    fine = client.post("/api/v1/datasets", headers=auth, files=files[:2])
    assert fine.status_code == 201, fine.text
