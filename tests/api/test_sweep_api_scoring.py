"""Scoring settings refused in one error each, at the place of the field that is wrong, and
never a 500: a benchmark's scoring (`PUT …/scoring`) and a rescore's `scoring`."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

from benchgen.jobs.worker import Worker
from benchgen.services.runtime import Runtime
from tests.support import QA, World


def _errors(client: TestClient, method: str, url: str, body: Any, auth: dict[str, str]) -> Any:
    sent = client.request(method, url, json=body, headers=auth)
    assert sent.status_code == 422, sent.text
    return sent.json()["error"]["details"]["errors"]


def test_scoring_settings_are_refused_at_the_field_they_name(
    client: TestClient, world: World, runtime: Runtime
) -> None:
    ana = world.user("ana@example.com")
    auth = {"Authorization": f"Bearer {world.token(ana, ['read', 'create', 'edit', 'runs'])}"}
    bm = client.post("/api/v1/benchmarks", json=QA, headers=auth).json()["benchmark"]["id"]
    url = f"/api/v1/benchmarks/{bm}/scoring"
    before = client.get(url, headers=auth).json()

    refused = {
        # One error, not one per member of a union (at ["body", "options", "pattern", "bool"]).
        "pattern": (
            {"method": "regex", "options": {"pattern": "^P"}},
            "must be true, false or a number",
        ),
        # The body has no `scoring` field: the service's place is turned into the body's own.
        "case": ({"method": "exact", "options": {"case": 1}}, "expected true or false, got 1"),
    }
    for option, (body, msg) in refused.items():
        assert _errors(client, "PUT", url, body, auth) == [
            {"loc": ["body", "options", option], "msg": msg}
        ]
    [wrong] = _errors(client, "PUT", url, {"method": "choice"}, auth)
    assert wrong["loc"] == ["body", "method"] and "does not apply to qa" in wrong["msg"]
    assert client.get(url, headers=auth).json() == before

    run = client.post(
        "/api/v1/runs", json={"benchmark_id": bm, "model_id": "mdl_builtin_echo"}, headers=auth
    ).json()["id"]
    while Worker(runtime).run_once():
        pass
    # An integer too large for a float: the scorer's finiteness check raised on it (a 500).
    huge = {"scoring": {"method": "f1", "options": {"threshold": 10**400}}}
    assert _errors(client, "POST", f"/api/v1/runs/{run}/rescore", huge, auth) == [
        {"loc": ["body", "scoring", "options", "threshold"], "msg": "is too large a number"}
    ]
    assert _errors(client, "PUT", url, huge["scoring"], auth)[0]["loc"] == [
        "body",
        "options",
        "threshold",
    ]
    case = {"scoring": {"method": "exact", "options": {"case": 1}}}
    assert _errors(client, "POST", f"/api/v1/runs/{run}/rescore", case, auth) == [
        {"loc": ["body", "scoring", "options", "case"], "msg": "expected true or false, got 1"}
    ]
