"""Runs and models through the API as a careless or hostile client: a field the request's
kind does not read is refused at its place, never dropped; a refusal lists each broken rule,
names what may be typed instead, and changes nothing."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from benchgen.core.permissions import Scope
from tests.support import World

# Model endpoints on 127.0.0.1 (the stubs) are allowed, as an operator's allow-list would.
pytestmark = pytest.mark.usefixtures("local_models")

ALL_SCOPES = sorted(scope.value for scope in Scope)
ECHO = "mdl_builtin_echo"
TAGGED = {
    "title": "Tagged",
    "format": "qa",
    "questions": [
        {"prompt": f"Question {i}?", "answer": str(i), "tags": ["hard" if i % 2 else "easy"]}
        for i in range(6)
    ],
}


@pytest.fixture
def auth(world: World) -> dict[str, str]:
    ana = world.user("ana@example.com", credits_=100)
    return {"Authorization": f"Bearer {world.token(ana, ALL_SCOPES)}"}


def only_problem(response: Any) -> dict[str, Any]:
    assert response.status_code == 422, response.text
    errors: list[dict[str, Any]] = response.json()["error"]["details"]["errors"]
    assert len(errors) == 1, errors
    return errors[0]


@pytest.mark.parametrize(
    ("subset", "field"),
    [
        ({"kind": "first", "n": 2, "tags": ["hard"]}, "tags"),
        ({"kind": "random", "n": 2, "seed": 4, "tags": ["hard"]}, "tags"),
        ({"kind": "tags", "tags": ["hard"], "n": 2}, "n"),
        ({"kind": "first", "n": 2, "seed": 7}, "seed"),
        ({"kind": "tags", "tags": ["hard"], "seed": 7}, "seed"),
    ],
)
def test_a_subset_refuses_a_field_its_kind_does_not_read(
    client: TestClient, world: World, auth: dict[str, str], subset: dict[str, Any], field: str
) -> None:
    # {"kind": "first", "n": 2, "tags": ["hard"]} ran the first two questions, hard or not.
    bm = client.post("/api/v1/benchmarks", json=TAGGED, headers=auth).json()["benchmark"]["id"]
    body = {"benchmark_id": bm, "model_id": ECHO, "subset": subset}
    for path in ("/api/v1/runs/estimate", "/api/v1/runs"):
        problem = only_problem(client.post(path, json=body, headers=auth))
        assert problem["loc"] == ["body", "subset", field]
        assert f"subset takes no {field}" in problem["msg"]
    assert client.get(f"/api/v1/runs?benchmark_id={bm}", headers=auth).json()["items"] == []
    assert client.get(f"/api/v1/benchmarks/{bm}", headers=auth).json()["questions_frozen"] is False


def test_a_subset_sent_whole_with_unused_fields_at_their_defaults_runs(
    client: TestClient, auth: dict[str, str]
) -> None:
    # What a form or a dump of a subset sends: every field, those of other kinds unset.
    bm = client.post("/api/v1/benchmarks", json=TAGGED, headers=auth).json()["benchmark"]["id"]
    subsets = [
        {"kind": "first", "n": 2, "seed": 0, "tags": []},
        {"kind": "random", "n": 2, "seed": 3, "tags": []},
        {"kind": "tags", "n": None, "seed": 0, "tags": ["hard"]},
    ]
    for subset, count in zip(subsets, (2, 2, 3), strict=True):
        body = {"benchmark_id": bm, "model_id": ECHO, "subset": subset}
        estimate = client.post("/api/v1/runs/estimate", json=body, headers=auth)
        assert estimate.status_code == 200, estimate.text
        assert estimate.json()["question_count"] == count


MINE = {"name": "My Claude", "kind": "anthropic", "endpoint_model": "claude-x", "api_key": "sk-a"}


def test_an_anthropic_model_refuses_a_seed_it_would_never_send(
    client: TestClient, auth: dict[str, str]
) -> None:
    seeded = {**MINE, "params": {"seed": 7, "max_tokens": 64}}
    problem = only_problem(client.post("/api/v1/models", json=seeded, headers=auth))
    assert problem["loc"] == ["body", "params", "seed"]
    assert "Anthropic" in problem["msg"]
    listed = client.get("/api/v1/models", headers=auth).json()["items"]
    assert all(model["owner"] == "platform" for model in listed)
    made = client.post("/api/v1/models", json=MINE, headers=auth)
    assert made.status_code == 201, made.text
    path = f"/api/v1/models/{made.json()['id']}"
    change = client.patch(path, json={"params": {"seed": 7}}, headers=auth)
    assert only_problem(change)["loc"] == ["body", "params", "seed"]
    kept = client.patch(path, json={"params": {"max_tokens": 64}}, headers=auth)
    assert kept.status_code == 200, kept.text


def test_a_download_in_an_unknown_format_names_the_formats_it_has(
    client: TestClient, world: World, auth: dict[str, str]
) -> None:
    # The refusal read "String should match pattern '^(jsonl|csv)$'": a regular expression
    # where a person needs the two words to type.
    bm = client.post("/api/v1/benchmarks", json=TAGGED, headers=auth).json()["benchmark"]["id"]
    run = client.post("/api/v1/runs", json={"benchmark_id": bm, "model_id": ECHO}, headers=auth)
    downloads = {
        f"/api/v1/runs/{run.json()['id']}/export?format=xlsx": "'jsonl' or 'csv'",
        f"/api/v1/benchmarks/{bm}/leaderboard/export?format=xlsx": "'csv' or 'json'",
    }
    for path, formats in downloads.items():
        problem = only_problem(client.get(path, headers=auth))
        assert problem["loc"] == ["query", "format"]
        assert formats in problem["msg"] and "pattern" not in problem["msg"]


def test_a_model_refusal_lists_each_broken_rule_and_saves_nothing(
    client: TestClient, auth: dict[str, str]
) -> None:
    # The name, the address and the parameters came back one refusal at a time.
    platform_name = client.get(f"/api/v1/models/{ECHO}", headers=auth).json()["name"]
    broken = {
        "name": platform_name.upper(),
        "endpoint_model": "m",
        "base_url": "http://10.0.0.5/v1",
        "params": {"max_tokens": 0},
    }
    refused = client.post("/api/v1/models", json=broken, headers=auth)
    assert refused.status_code == 422, refused.text
    places = [error["loc"] for error in refused.json()["error"]["details"]["errors"]]
    assert places == [["body", "name"], ["body", "base_url"], ["body", "params", "max_tokens"]]
    listed = client.get("/api/v1/models", headers=auth).json()["items"]
    assert all(model["owner"] == "platform" for model in listed)
    made = client.post("/api/v1/models", json=MINE, headers=auth).json()
    change = {"name": platform_name, "params": {"timeout_s": 0}}
    refused = client.patch(f"/api/v1/models/{made['id']}", json=change, headers=auth)
    assert refused.status_code == 422, refused.text
    places = [error["loc"] for error in refused.json()["error"]["details"]["errors"]]
    assert places == [["body", "name"], ["body", "params", "timeout_s"]]
    assert client.get(f"/api/v1/models/{made['id']}", headers=auth).json()["name"] == MINE["name"]


def test_an_anthropic_model_needs_its_key_and_keeps_it(
    client: TestClient, auth: dict[str, str]
) -> None:
    """Saved without a key, every run of it failed ("an Anthropic model needs an API key")."""
    keyless = {key: value for key, value in MINE.items() if key != "api_key"}
    problem = only_problem(client.post("/api/v1/models", json=keyless, headers=auth))
    assert problem["loc"] == ["body", "api_key"] and "needs an API key" in problem["msg"]
    made = client.post("/api/v1/models", json=MINE, headers=auth)
    assert made.status_code == 201, made.text
    path = f"/api/v1/models/{made.json()['id']}"
    for removal in ("", "   "):
        refused = client.patch(path, json={"api_key": removal}, headers=auth)
        assert only_problem(refused)["loc"] == ["body", "api_key"]
    assert client.get(path, headers=auth).json()["has_api_key"] is True


def test_a_models_parameters_can_be_read_before_they_are_replaced(
    client: TestClient, auth: dict[str, str]
) -> None:
    """A PATCH replaces them whole, and nothing showed what they were."""
    made = client.post(
        "/api/v1/models", json={**MINE, "params": {"max_tokens": 64}}, headers=auth
    ).json()
    path = f"/api/v1/models/{made['id']}"
    assert made["params"] == {"max_tokens": 64}
    changed = client.patch(path, json={"params": {"timeout_s": 30}}, headers=auth)
    assert changed.json()["params"] == {"timeout_s": 30}
    assert client.get(path, headers=auth).json()["params"] == {"timeout_s": 30}
    listed = client.get("/api/v1/models", headers=auth).json()["items"]
    assert [m["params"] for m in listed if m["id"] == made["id"]] == [{"timeout_s": 30}]
