"""Input rules through HTTP: lengths in characters, a body that must be JSON, model
registration's refusals, and no boolean where a count is due."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient
from httpx import Response

from benchgen.core.permissions import Scope
from tests.support import World

ALL_SCOPES = sorted(scope.value for scope in Scope)
PUBLIC = "http://93.184.216.34/v1"  # a public address: nothing to resolve offline
MODEL = {"name": "Mine", "endpoint_model": "m", "base_url": PUBLIC}


@pytest.fixture
def auth(world: World) -> dict[str, str]:
    ana = world.user("ana@example.com", credits_=10)
    return {"Authorization": f"Bearer {world.token(ana, ALL_SCOPES)}"}


def problem(response: Response) -> dict[str, Any]:
    assert response.status_code == 422, response.text
    first: dict[str, Any] = response.json()["error"]["details"]["errors"][0]
    return first


def test_length_errors_count_characters(
    client: TestClient, world: World, auth: dict[str, str]
) -> None:
    bm = world.benchmark(world.api(auth["Authorization"][7:]).user_id or "")
    for field, size in (("description", 20_001), ("title", 201)):
        response = client.patch(f"/api/v1/benchmarks/{bm}", json={field: "x" * size}, headers=auth)
        assert "characters" in problem(response)["msg"], response.text
    created = client.post("/api/v1/models", json=MODEL, headers=auth).json()
    renamed = client.patch(
        f"/api/v1/models/{created['id']}", json={"name": "x" * 201}, headers=auth
    )
    assert "characters" in problem(renamed)["msg"]


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", None])
def test_a_body_of_another_type_is_told_to_be_json(
    client: TestClient, auth: dict[str, str], content_type: str | None
) -> None:
    body = b'{"title": "T", "format": "qa", "questions": []}'
    headers = {**auth, **({"Content-Type": content_type} if content_type else {})}
    response = client.post("/api/v1/benchmarks", content=body, headers=headers)
    assert problem(response) == {
        "loc": ["body"],
        "msg": "must be JSON, sent as Content-Type: application/json",
    }


@pytest.mark.parametrize(
    ("path", "field"), [("/api/v1/datasets", "name"), ("/api/v1/benchmarks/import/file", "title")]
)
def test_a_form_encoded_body_to_a_file_route_is_refused_after_the_token(
    client: TestClient, auth: dict[str, str], path: str, field: str
) -> None:
    """The input check read the body again after the framework had parsed it as a form: a
    500, even without a token."""
    form = {field: "x"}
    assert client.post(path, data=form).status_code == 401
    refused = client.post(path, data=form, headers=auth)
    assert refused.status_code == 422, refused.text
    # A form without its file: the content type is the cause, not the fields it lacks.
    assert problem(refused) == {
        "loc": ["body"],
        "msg": "must be a form with its file, sent as Content-Type: multipart/form-data",
    }
    files = {"file": ("d.jsonl", b'{"prompt": "p", "completion": "c"}\n')}
    nul = client.post(path, data={field: "a\x00b"}, files=files, headers=auth)
    assert problem(nul)["loc"] == ["body", field]


@pytest.mark.parametrize(
    ("change", "loc"),
    [
        ({"price_per_question": 100}, ["body", "price_per_question"]),
        ({"price_per_1k_tokens": 0}, ["body", "price_per_1k_tokens"]),
        ({"params": {"max_tokens": True}}, ["body", "params", "max_tokens"]),
        ({"params": {"timeout_s": True}}, ["body", "params", "timeout_s"]),
        ({"params": {"seed": 2**31}}, ["body", "params", "seed"]),
        ({"base_url": PUBLIC + "?x=1"}, ["body", "base_url"]),
        ({"base_url": PUBLIC + "#frag"}, ["body", "base_url"]),
        ({"base_url": PUBLIC + "?"}, ["body", "base_url"]),
    ],
)
def test_model_registration_refuses_what_it_would_drop_or_mangle(
    client: TestClient, auth: dict[str, str], change: dict[str, Any], loc: list[Any]
) -> None:
    response = client.post("/api/v1/models", json={**MODEL, **change}, headers=auth)
    assert problem(response)["loc"] == loc
    assert client.get("/api/v1/models", headers=auth).json()["items"][-1]["name"] != "Mine"


def test_a_seed_may_be_the_largest_32_bit_integer(client: TestClient, auth: dict[str, str]) -> None:
    largest = {**MODEL, "params": {"seed": 2**31 - 1}}
    assert client.post("/api/v1/models", json=largest, headers=auth).status_code == 201


@pytest.mark.parametrize("change", [{}, {"name": None}])
def test_a_model_change_that_changes_nothing_is_409(
    client: TestClient, auth: dict[str, str], change: dict[str, Any]
) -> None:
    created = client.post("/api/v1/models", json=MODEL, headers=auth).json()
    response = client.patch(f"/api/v1/models/{created['id']}", json=change, headers=auth)
    assert response.status_code == 409, response.text
    assert response.json()["error"]["message"] == "The change changes nothing."


@pytest.mark.parametrize(
    ("extra", "loc"),
    [
        ({"max_credits": True}, ["body", "max_credits"]),
        ({"settings": {"samples": True}}, ["body", "settings", "samples"]),
        ({"settings": {"max_tokens": True}}, ["body", "settings", "max_tokens"]),
        ({"subset": {"kind": "first", "n": True}}, ["body", "subset", "n"]),
    ],
)
def test_a_boolean_is_no_count(
    client: TestClient, world: World, auth: dict[str, str], extra: dict[str, Any], loc: list[Any]
) -> None:
    bm = world.benchmark(world.api(auth["Authorization"][7:]).user_id or "")
    body = {"benchmark_id": bm, "model_id": "mdl_builtin_echo", **extra}
    for path in ("/api/v1/runs", "/api/v1/runs/estimate"):
        response = client.post(path, json=body, headers=auth)
        assert problem(response)["loc"] == loc, path
