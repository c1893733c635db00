"""Through HTTP: a run or submission naming no phase when none is open is a 409 that names
`phase`; a participant the owner removed gets a 403 that says why, for runs and submissions."""

from __future__ import annotations

import copy

from fastapi.testclient import TestClient
from httpx import Response

from benchgen.core.clock import ManualClock
from benchgen.core.context import Principal
from benchgen.services.benchmarks import bundles, lifecycle, members
from tests.bundle_factory import ANSWERS, bundle, competition, require_sandbox, results
from tests.support import World

ALL = ["read", "runs"]
ECHO = "mdl_builtin_echo"


def headers(world: World, user_id: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {world.token(user_id, ALL)}"}


def closed_between(world: World, owner: str) -> str:
    """Development ended 10 January 2026; Final opens 12 January."""
    comp = competition()
    comp["phases"][0]["end"] = "2026-01-10T00:00:00Z"
    final = {**copy.deepcopy(comp["phases"][0]), "index": 1, "name": "Final"}
    final.update(start="2026-01-12T00:00:00Z")
    del final["end"]
    comp["phases"].append(final)
    made = world.do(Principal.web(owner), bundles.upload_bundle, bundle(comp), "two.zip")
    world.do(Principal.web(owner), lifecycle.publish_benchmark, made.benchmark.id)
    return made.benchmark.id


def send(client: TestClient, bm: str, who: dict[str, str]) -> Response:
    files = {"submission": ("a.zip", results(ANSWERS), "application/zip")}
    return client.post(f"/api/v1/benchmarks/{bm}/submissions", files=files, headers=who)


def test_no_phase_open_is_a_409_naming_phase(
    client: TestClient, world: World, clock: ManualClock
) -> None:
    require_sandbox()
    ana = world.user("ana@example.com", credits_=100)
    bm = closed_between(world, ana)
    clock.advance(days=10, hours=12)
    who = headers(world, ana)
    answers = [
        client.post("/api/v1/runs", json={"benchmark_id": bm, "model_id": ECHO}, headers=who),
        client.get(f"/api/v1/runs/estimate?benchmark_id={bm}&model_id={ECHO}", headers=who),
        send(client, bm, who),
    ]
    for answer in answers:
        assert answer.status_code == 409, answer.text
        error = answer.json()["error"]
        assert "the phases of this benchmark are not open now" in error["message"], error
        assert error["details"]["field"] == "phase", error
    clock.advance(days=2)
    started = client.post("/api/v1/runs", json={"benchmark_id": bm, "model_id": ECHO}, headers=who)
    assert started.status_code == 202, started.text


def test_a_removed_participant_gets_a_403_that_says_why(client: TestClient, world: World) -> None:
    require_sandbox()
    ana = world.user("ana@example.com")
    bob = world.user("bob@example.com", credits_=100)
    bm = closed_between(world, ana)
    world.do(Principal.web(bob), members.join_benchmark, bm, True)
    world.do(Principal.web(ana), members.set_participant_status, bm, bob, "removed")
    who = headers(world, bob)
    answers = [
        client.post("/api/v1/runs", json={"benchmark_id": bm, "model_id": ECHO}, headers=who),
        send(client, bm, who),
    ]
    for answer in answers:
        assert answer.status_code == 403, answer.text
        message = answer.json()["error"]["message"]
        assert "the owner removed you from this benchmark" in message
    assert client.get(f"/api/v1/benchmarks/{bm}", headers=who).status_code == 200
