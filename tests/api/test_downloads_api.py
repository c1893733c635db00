"""The leaderboard download and the notification settings through HTTP."""

from __future__ import annotations

import csv
import io

from fastapi.testclient import TestClient

from benchgen.core.context import Principal
from benchgen.services.runs import launch, leaderboards
from benchgen.services.runtime import Runtime
from tests.api.test_flows import bearer, error_of
from tests.services.test_runs import work_all
from tests.support import MCQ, World


def test_leaderboard_export(client: TestClient, world: World, runtime: Runtime) -> None:
    ana = world.user("ana@example.com")
    bm = world.benchmark(ana, MCQ)
    run_id = world.do(Principal.web(ana), launch.start_run, bm, "mdl_builtin_first").id
    work_all(runtime)
    world.do(Principal.web(ana), leaderboards.add_to_leaderboard, run_id)
    auth = bearer(world.token(ana, ["read"]))
    url = f"/api/v1/benchmarks/{bm}/leaderboard/export"

    got = client.get(url, headers=auth)
    assert got.status_code == 200 and got.headers["content-type"].startswith("text/csv")
    assert f'filename="{bm}-leaderboard.csv"' in got.headers["content-disposition"]
    rows = list(csv.DictReader(io.StringIO(got.text)))
    assert [(row["rank"], row["run_id"]) for row in rows] == [("1", run_id)]

    got = client.get(url, params={"format": "json"}, headers=auth)
    assert got.headers["content-type"].startswith("application/json")
    assert got.json()["rows"][0]["run_id"] == run_id

    error_of(client.get(url, params={"format": "xlsx"}, headers=auth), 422, "invalid_input")
    stranger = bearer(world.token(world.user("bob@example.com"), ["read"]))
    error_of(client.get(url, headers=stranger), 404, "not_found")


def test_notification_settings_through_a_token(client: TestClient, world: World) -> None:
    ana = world.user("ana@example.com")
    auth = bearer(world.token(ana, ["runs"]))
    url = "/api/v1/me/notifications"
    assert client.get(url, headers=auth).json() == {
        "email_on_finish": False,
        "webhook_url": None,
        "has_webhook_secret": False,
        "webhook_secret": None,
        "updated_at": None,
    }
    body = {"email_on_finish": True, "webhook_url": "https://93.184.216.34/bg"}
    answer = client.put(url, json=body, headers=auth)
    saved = answer.json()
    assert saved["webhook_secret"].startswith("whsec_") and saved["has_webhook_secret"]
    assert answer.headers["cache-control"] == "no-store"  # shown once: kept by no cache
    again = client.put(url, json=body, headers=auth).json()
    assert again["webhook_secret"] is None  # kept, and never shown again
    rotated = client.put(url, json={**body, "rotate_secret": True}, headers=auth).json()
    assert rotated["webhook_secret"] not in (None, saved["webhook_secret"])
    shown = client.get(url, headers=auth).json()
    assert shown["webhook_secret"] is None and shown["webhook_url"] == body["webhook_url"]

    bad = client.put(url, json={"webhook_url": "http://169.254.169.254/"}, headers=auth)
    assert error_of(bad, 422, "invalid_input")["details"]["errors"][0]["loc"] == [
        "body",
        "webhook_url",
    ]
    reader = bearer(world.token(ana, ["read", "edit", "create", "publish", "train"]))
    refused = error_of(client.put(url, json=body, headers=reader), 403, "permission_denied")
    assert "runs" in refused["message"]
    error_of(client.put(url, json={"other": 1}, headers=auth), 422, "invalid_input")
