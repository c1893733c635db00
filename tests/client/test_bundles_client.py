"""The Python client's custom-benchmark calls against the app in this process: multipart
uploads from a path or bytes, versions, downloads, submissions and program output."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from benchgen.client import InvalidInput, NotFound, PermissionDenied
from benchgen.services.runtime import Runtime
from tests.bundle_factory import bundle, competition, require_sandbox, results
from tests.client.relay import connect
from tests.services.test_runs import work_all
from tests.support import World

ALL = ["read", "runs", "create", "edit", "publish"]


def test_upload_version_download_submit_and_output(
    server: TestClient, world: World, runtime: Runtime, tmp_path: Path
) -> None:
    require_sandbox()
    ana = world.user("ana@example.com")
    path = tmp_path / "tiny.zip"
    path.write_bytes(bundle(competition(mystery_key=1)))
    with connect(server, world.token(ana, ALL)) as bg:
        created = bg.upload_bundle(path)
        bm = created["benchmark"]["id"]
        assert created["benchmark"]["format"] == "custom" and created["warnings"]
        first = bg.get_bundle(bm)
        assert first["version"] == 1 and first["filename"] == "tiny.zip"
        assert first["solutions"] is not None and first["solutions"][0]["ok"]
        changed = bg.upload_bundle_version(bm, bundle(competition(title="Tiny v2")), "v2.zip")
        assert changed["version"] == 2 and changed["versions"] is not None
        assert bg.download_bundle(bm, version=1) == path.read_bytes()
        assert bg.download_bundle(bm) == bg.download_bundle(bm, 2)
        run = bg.submit(bm, results({"q1": "paris", "q2": "4"}), phase=0, kind="results")
        assert run["model_id"] is None and run["status"] == "queued"
        work_all(runtime)
        done = bg.wait_for_run(run["id"], timeout_s=5)
        assert done["status"] == "completed", done["error"]
        assert done["scores"]["accuracy"] == 1.0
        assert "scored 2 items" in bg.program_output(run["id"])["task-0"]


def test_errors_come_back_as_client_errors(server: TestClient, world: World) -> None:
    ana, bob = world.user("ana@example.com"), world.user("bob@example.com")
    broken = competition()
    broken["phases"][0]["tasks"] = [5]
    with connect(server, world.token(ana, ALL)) as bg:
        with pytest.raises(InvalidInput) as invalid:
            bg.upload_bundle(bundle(broken), "broken.zip")
        assert invalid.value.errors[0]["line"] and invalid.value.errors[0]["loc"]
        with pytest.raises(NotFound):
            bg.get_bundle("bm_nowhere")
    with connect(server, world.token(bob, ["read"])) as reader:
        with pytest.raises(PermissionDenied):
            reader.upload_bundle(bundle())
        with pytest.raises(NotFound):
            reader.submit("bm_nowhere", results({}))
        with pytest.raises(NotFound):
            reader.download_bundle("bm_nowhere")
