"""Custom formats through HTTP: multipart uploads, their errors and limits, downloads as
attachments, submissions that become scored runs, and what a token may not do."""

from __future__ import annotations

import os
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from benchgen.app import create_app
from benchgen.bundles.proxy import new_proxy_key
from benchgen.core.secrets import redact_secrets
from benchgen.services.runtime import Runtime
from tests.bundle_factory import (
    SCORER,
    bundle,
    competition,
    programs_started,
    require_sandbox,
    results,
    zip_of,
)
from tests.services.test_runs import work_all
from tests.support import World

ALL = ["read", "runs", "create", "edit", "publish"]


def bearer(world: World, user_id: str, scopes: list[str] = ALL) -> dict[str, str]:
    return {"Authorization": f"Bearer {world.token(user_id, scopes)}"}


def upload(client: TestClient, headers: dict[str, str], data: bytes, name: str = "tiny.zip") -> Any:
    files = {"bundle": (name, data, "application/zip")}
    return client.post("/api/v1/benchmarks/bundles", files=files, headers=headers)


def test_upload_creates_a_custom_benchmark_with_warnings(client: TestClient, world: World) -> None:
    require_sandbox()
    ana = bearer(world, world.user("ana@example.com"))
    answer = upload(client, ana, bundle(competition(mystery_key="?")))
    assert answer.status_code == 201, answer.text
    body = answer.json()
    assert body["benchmark"]["format"] == "custom" and body["benchmark"]["title"] == "Tiny custom"
    assert any("mystery_key" in w["loc"] for w in body["warnings"]), body["warnings"]
    got = client.get(f"/api/v1/benchmarks/{body['benchmark']['id']}/bundle", headers=ana).json()
    assert got["version"] == 1 and got["solutions"][0]["ok"], got["solutions"]
    assert got["solutions"][0]["scores"]["accuracy"] == 1.0


def test_broken_bundle_lists_every_problem_with_place_and_line(
    client: TestClient, world: World
) -> None:
    ana = bearer(world, world.user("ana@example.com"))
    broken = competition()
    broken["phases"][0]["tasks"] = [5]
    del broken["leaderboards"][0]["columns"][0]["key"]
    answer = upload(client, ana, bundle(broken))
    assert answer.status_code == 422, answer.text
    problems = answer.json()["error"]["details"]["errors"]
    assert len(problems) >= 2, problems
    for problem in problems:
        assert problem["loc"] and isinstance(problem["line"], int), problem
    not_zip = upload(client, ana, b"not a zip at all")
    assert not_zip.status_code == 422


def test_a_token_without_the_create_scope_cannot_upload(client: TestClient, world: World) -> None:
    reader = bearer(world, world.user("ana@example.com"), ["read", "runs"])
    answer = upload(client, reader, bundle())
    assert answer.status_code == 403, answer.text
    assert answer.json()["error"]["code"] == "permission_denied"


def test_submission_becomes_a_scored_run(
    client: TestClient, world: World, runtime: Runtime
) -> None:
    require_sandbox()
    ana = bearer(world, world.user("ana@example.com"))
    bm = upload(client, ana, bundle()).json()["benchmark"]["id"]
    files = {"submission": ("half.zip", results({"q1": "paris"}), "application/zip")}
    sent = client.post(
        f"/api/v1/benchmarks/{bm}/submissions",
        files=files,
        data={"phase": "0", "kind": "results"},
        headers=ana,
    )
    assert sent.status_code == 202, sent.text
    run = sent.json()
    assert run["model_id"] is None and run["status"] == "queued"
    work_all(runtime)
    done = client.get(f"/api/v1/runs/{run['id']}", headers=ana).json()
    assert done["status"] == "completed", done["error"]
    assert done["scores"] == {"accuracy": 0.5, "errors": 1.0, "combined": 1.5}
    output = client.get(f"/api/v1/runs/{run['id']}/program-output", headers=ana)
    assert output.status_code == 200 and "scored 2 items" in output.json()["task-0"]
    no_phase = client.post(
        f"/api/v1/benchmarks/{bm}/submissions", files=files, data={"phase": "9"}, headers=ana
    )
    assert no_phase.status_code == 422, no_phase.text


def test_download_is_an_attachment_for_the_team_only(client: TestClient, world: World) -> None:
    require_sandbox()
    ana = bearer(world, world.user("ana@example.com"))
    bob = bearer(world, world.user("bob@example.com"))
    data = bundle()
    bm = upload(client, ana, data).json()["benchmark"]["id"]
    got = client.get(f"/api/v1/benchmarks/{bm}/bundle/download", headers=ana)
    assert got.status_code == 200 and got.content == data
    assert got.headers["content-type"] == "application/zip"
    assert got.headers["content-disposition"] == f'attachment; filename="{bm}-v1.zip"'
    assert got.headers["x-content-type-options"] == "nosniff"
    missing = client.get(f"/api/v1/benchmarks/{bm}/bundle/download?version=2", headers=ana)
    assert missing.status_code == 404
    hidden = client.get(f"/api/v1/benchmarks/{bm}/bundle/download", headers=bob)
    assert hidden.status_code == 404  # private: bob may not know it exists
    publish = client.post(f"/api/v1/benchmarks/{bm}/publish", headers=ana)
    assert publish.status_code == 200, publish.text
    refused = client.get(f"/api/v1/benchmarks/{bm}/bundle/download", headers=bob)
    assert refused.status_code == 403  # published: he sees it, never its reference data
    public = client.get(f"/api/v1/benchmarks/{bm}/bundle", headers=bob).json()
    assert public["solutions"] is None and public["versions"] is None
    assert "solutions" not in public["competition"]


def test_a_body_over_the_bundle_limit_is_413(runtime: Runtime, world: World) -> None:
    runtime.settings = runtime.settings.model_copy(update={"max_bundle_bytes": 1024})
    ana = bearer(world, world.user("ana@example.com"))
    with TestClient(create_app(runtime.settings, runtime)) as small:
        answer = upload(small, ana, os.urandom(200 * 1024))
    assert answer.status_code == 413, answer.text
    assert answer.json()["error"]["code"] == "too_large"


def test_a_token_cannot_add_a_phase_with_a_new_version(client: TestClient, world: World) -> None:
    require_sandbox()
    ana = bearer(world, world.user("ana@example.com"))
    bm = upload(client, ana, bundle()).json()["benchmark"]["id"]
    two = competition()
    two["phases"].append({**two["phases"][0], "index": 1, "name": "Final", "start": "1-1-2021"})
    files = {"bundle": ("two.zip", bundle(two), "application/zip")}
    answer = client.post(f"/api/v1/benchmarks/{bm}/bundle", files=files, headers=ana)
    assert answer.status_code == 403, answer.text
    error = answer.json()["error"]
    # The refusal names where to do it instead (access puts the page in the details).
    assert error["details"]["page"].endswith(f"/benchmarks/{bm}/settings/phases"), error
    assert "web app" in error["message"]
    same = {"bundle": ("v2.zip", bundle(competition(title="Tiny v2")), "application/zip")}
    changed = client.post(f"/api/v1/benchmarks/{bm}/bundle", files=same, headers=ana)
    assert changed.status_code == 200, changed.text
    assert changed.json()["version"] == 2 and len(changed.json()["versions"]) == 2


HOSTILE_SCORERS = {
    "endless loop": "while True:\n    pass\n",
    "memory hog": "blob = bytearray(8 << 30)\n",
    "fork bomb": "import os\nwhile True:\n    os.fork()\n",
    "network": "import socket\nsocket.create_connection(('127.0.0.1', 5432), timeout=2)\n",
    "outside its folder": "open('/app/program/../../etc/hostile', 'w').write('x')\n",
    "huge output": "while True:\n    print('x' * 10000)\n",
}


@pytest.mark.parametrize("name", sorted(HOSTILE_SCORERS))
def test_a_hostile_scoring_program_is_stopped_while_the_server_answers(
    runtime: Runtime, world: World, name: str
) -> None:
    require_sandbox()
    settings = runtime.settings.model_copy(
        update={"worker_threads": 1, "program_wall_seconds": 4, "program_memory_mib": 512}
    )
    with TestClient(create_app(settings, replace(runtime, settings=settings))) as client:
        owner = world.user("ana@example.com")
        ana = bearer(world, owner)
        # Without solutions the upload runs nothing; the submission meets the hostile scorer.
        comp = competition(solutions=[])
        made = upload(client, ana, bundle(comp, scorer=HOSTILE_SCORERS[name])).json()
        bm = made["benchmark"]["id"]
        files = {"submission": ("r.zip", results({"q1": "paris"}), "application/zip")}
        run = client.post(f"/api/v1/benchmarks/{bm}/submissions", files=files, headers=ana)
        assert run.status_code == 202, run.text
        answered = 0
        for _ in range(300):
            assert client.get("/healthz").status_code == 200
            state = client.get(f"/api/v1/runs/{run.json()['id']}", headers=ana).json()
            answered += 1
            if state["status"] in ("completed", "failed"):
                break
            time.sleep(0.1)
        assert state["status"] == "failed", state
        assert "scoring program" in state["error"], state["error"]
        assert answered >= 1
    assert not Path("/etc/hostile").exists()


def test_a_run_proxy_key_is_refused_by_the_api_and_screened(
    client: TestClient, world: World
) -> None:
    key = new_proxy_key()
    answer = client.get("/api/v1/benchmarks", headers={"Authorization": f"Bearer {key}"})
    assert answer.status_code == 401
    assert key not in redact_secrets(f"the ingestion program printed {key}")


def test_an_unsafe_archive_is_refused_before_anything_is_kept(
    client: TestClient, world: World
) -> None:
    ana = bearer(world, world.user("ana@example.com"))
    slip = zip_of({"competition.yaml": b"version: 2\n", "../escaped.txt": b"x"})
    answer = upload(client, ana, slip)
    assert answer.status_code == 422, answer.text
    assert "escaped.txt" in answer.text
    listed = client.get("/api/v1/benchmarks?mine=true", headers=ana).json()
    assert listed["items"] == []


@pytest.mark.parametrize("backend", ["sqlite"])
def test_other_writes_go_on_while_an_uploads_programs_run(
    client: TestClient, world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    # On SQLite a write transaction holds the lock of the whole database: an upload that ran
    # its programs inside one stopped every write on the server for as long as they took.
    require_sandbox()
    ana = bearer(world, world.user("ana@example.com"))
    bob = bearer(world, world.user("bob@example.com"))
    running = programs_started(monkeypatch)
    slow = bundle(scorer="import time\ntime.sleep(3)\n" + SCORER)
    uploaded: list[Any] = []
    thread = threading.Thread(target=lambda: uploaded.append(upload(client, ana, slow)))
    thread.start()
    try:
        assert running.wait(30), "the upload's solution never started"
        started = time.monotonic()
        made = client.post("/api/v1/benchmarks", json={"title": "x", "format": "qa"}, headers=bob)
        took = time.monotonic() - started
    finally:
        thread.join(60)
    assert made.status_code == 201, made.text
    assert took < 1.5, f"the write waited {took:.1f} s for the upload's programs"
    assert uploaded[0].status_code == 201, uploaded[0].text
    assert uploaded[0].headers["X-RateLimit-Remaining"] == "2"
    got = client.get(
        f"/api/v1/benchmarks/{uploaded[0].json()['benchmark']['id']}/bundle", headers=ana
    )
    assert got.json()["solutions"][0]["ok"], got.json()["solutions"]
