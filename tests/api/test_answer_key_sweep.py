"""A stranger on a published qa benchmark tries every API door on their own run for the answer
key: none shows it, nor which of their answers were right (PRODUCT.md §1.2), nor a figure that
sums their verdicts finely enough to be decoded into them."""

from __future__ import annotations

import json

from fastapi.testclient import TestClient

from benchgen.core.context import Principal
from benchgen.services.benchmarks import lifecycle, scoring
from benchgen.services.runs import launch
from benchgen.services.runtime import Runtime
from tests.api.test_flows import ALL_SCOPES, bearer
from tests.services.test_runs import work_all
from tests.support import World

SECRET = "zebra-secret-7"
SECRETS = {
    "title": "Secrets",
    "format": "qa",
    "questions": [
        {"prompt": "First question?", "answer": SECRET, "tags": ["lonely"]},
        {"prompt": "Second question?", "answer": "your final reply", "tags": ["pair"]},
        {"prompt": "Third question?", "answer": "okapi-9", "tags": ["pair"]},
    ],
}
# A result's fields that tell its correctness or the key.
TELLING = {"expected", "correct", "outcome", "extracted", "reasoning", "score"}
# Summary figures the team alone sees: over part of the questions (a tag held by one question
# is its verdict), over samples, and the mean partial credit: an endpoint that pads each guess
# with its own number of words makes each right guess add its own power of two to an F1 sum.
TEAM_FIGURES = {"per_tag", "sampling", "mean_score"}


def test_a_strangers_doors_never_show_the_key_or_which_answers_were_right(
    client: TestClient, world: World, runtime: Runtime
) -> None:
    ana = world.user("ana@example.com")
    bm = world.benchmark(ana, SECRETS)
    world.do(Principal.web(ana), scoring.set_scoring, bm, {"method": "f1"})
    world.do(Principal.web(ana), lifecycle.publish_benchmark, bm)
    sam = bearer(world.token(world.user("sam@example.com"), ALL_SCOPES))
    started = client.post(
        "/api/v1/runs", json={"benchmark_id": bm, "model_id": "mdl_builtin_echo"}, headers=sam
    )
    assert started.status_code == 202, started.text
    run = started.json()["id"]
    work_all(runtime)
    shown = {
        "run": client.get(f"/api/v1/runs/{run}", headers=sam),
        "results": client.get(f"/api/v1/runs/{run}/results", headers=sam),
        "log": client.get(f"/api/v1/runs/{run}/log", headers=sam),
        "jsonl": client.get(f"/api/v1/runs/{run}/export?format=jsonl", headers=sam),
        "csv": client.get(f"/api/v1/runs/{run}/export?format=csv", headers=sam),
        "rescore": client.post(f"/api/v1/runs/{run}/rescore", headers=sam),
        "questions": client.get(f"/api/v1/benchmarks/{bm}/questions", headers=sam),
        "board": client.get(f"/api/v1/benchmarks/{bm}/leaderboard", headers=sam),
    }
    for door, answer in shown.items():
        assert answer.status_code == 200, (door, answer.text)
        assert SECRET not in answer.text and "okapi-9" not in answer.text, door
    for view in (shown["run"].json(), shown["rescore"].json()["after"]):
        assert "accuracy" in view.get("summary", view)
        assert not TEAM_FIGURES & set(view.get("summary", view))
    assert shown["rescore"].json()["changes"] == []
    owners = world.do(Principal.web(ana), launch.get_run, run).summary
    assert 0 < owners["mean_score"] < 1 and owners["accuracy"] == 0
    rows = [*shown["results"].json()["items"], *map(json.loads, shown["jsonl"].text.splitlines())]
    assert len(rows) == 6 and all(row["raw"] for row in rows)
    assert not any(TELLING & set(row) for row in rows)
    assert not TELLING & set(shown["csv"].text.splitlines()[0].split(","))
    refused = {
        "own scoring": client.post(
            f"/api/v1/runs/{run}/rescore",
            json={"scoring": {"method": "regex"}},
            headers=sam,
        ),
        "compare": client.get("/api/v1/runs/compare", params={"a": run, "b": run}, headers=sam),
        "key export": client.get(f"/api/v1/benchmarks/{bm}/export", headers=sam),
        "subset": client.post(
            "/api/v1/runs",
            json={
                "benchmark_id": bm,
                "model_id": "mdl_builtin_echo",
                "subset": {"kind": "tags", "tags": ["lonely"]},
            },
            headers=sam,
        ),
    }
    codes = {
        door: (answer.status_code, answer.json()["error"]["code"])
        for door, answer in refused.items()
    }
    assert codes == {
        "own scoring": (403, "permission_denied"),
        "compare": (403, "permission_denied"),
        "key export": (403, "permission_denied"),
        "subset": (422, "invalid_input"),
    }
    assert "only the benchmark's owner and collaborators" in refused["subset"].text
