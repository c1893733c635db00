"""Request bodies are strict: an unknown or misspelt field is a 422, never silently dropped, and a
boolean is JSON true or false, never "yes"."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from benchgen.jobs.worker import Worker
from benchgen.services.runtime import Runtime
from tests.support import QA, World

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
    assert _refused_at(scoring) == [["body", "case"]]
    assert client.get("/api/v1/runs", headers=auth).json()["items"] == []
    # Without a valid token, that is not explained: 401 comes first, as for any bad body.
    anonymous = {"Content-Type": "application/json"}
    assert client.post("/api/v1/runs", content=twice, headers=anonymous).status_code == 401
