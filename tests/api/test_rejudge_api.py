"""`POST /api/v1/runs/{id}/rejudge` and the client's `rejudge`: answers whose AI judging failed
go back to the judge (202), the run's scores follow once it has judged them, and refusals come
in the error envelope."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from benchgen.client import Conflict
from benchgen.services.runtime import Runtime
from tests.client.relay import connect
from tests.evals.stub_openai import StubOpenAI
from tests.services import test_rejudging
from tests.services.test_rejudging import Script, judged_run
from tests.services.test_runs import work_all
from tests.support import World

script = test_rejudging.script  # fixtures shared with the service tests
stub = test_rejudging.stub


def test_the_route_hands_failed_judging_back_and_the_scores_follow(
    client: TestClient, world: World, runtime: Runtime, stub: StubOpenAI, script: Script
) -> None:
    made = judged_run(world, runtime, stub)
    auth = {"Authorization": f"Bearer {world.token(made.ana, ['read', 'runs'])}"}
    script.up = True
    handed = client.post(f"/api/v1/runs/{made.run}/rejudge", headers=auth)
    assert handed.status_code == 202, handed.text
    assert handed.json() == {"run_id": made.run, "answers": 3}
    work_all(runtime)
    run = client.get(f"/api/v1/runs/{made.run}", headers=auth).json()
    assert run["summary"]["accuracy"] == pytest.approx(2 / 3) and run["status"] == "completed"
    rows = client.get(f"/api/v1/runs/{made.run}/results", headers=auth).json()["items"]
    assert [row["outcome"] for row in rows] == ["correct", "correct", "wrong"]
    again = client.post(f"/api/v1/runs/{made.run}/rejudge", headers=auth)
    assert again.status_code == 409
    error = again.json()["error"]
    assert error["code"] == "conflict" and "nothing to judge again" in error["message"]
    assert error["details"] == {"id": made.run}


def test_the_client_rejudges_and_raises_the_refusal(
    client: TestClient, world: World, runtime: Runtime, stub: StubOpenAI
) -> None:
    made = judged_run(world, runtime, stub)
    bg = connect(client, world.token(made.ana, ["read", "runs"]))
    assert bg.rejudge(made.run) == {"run_id": made.run, "answers": 3}
    with pytest.raises(Conflict, match="being judged again already"):
        bg.rejudge(made.run)
