"""The Python client's settings calls against the app in this process: a benchmark's scoring,
my notifications, the leaderboard as a file; and `benchgen models add`."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from benchgen.cli import app as cli
from benchgen.client import InvalidInput, PermissionDenied
from benchgen.core.config import Settings
from benchgen.core.context import Principal
from benchgen.services import models
from tests.client.relay import connect
from tests.support import QA, World


def test_scoring_notifications_and_leaderboard_file(server: TestClient, world: World) -> None:
    ana = world.user("ana@example.com")
    bm = world.benchmark(ana, QA)
    bg = connect(server, world.token(ana, ["read", "edit", "runs"]))
    assert bg.get_scoring(bm)["method"] == "exact"
    changed = bg.set_scoring(bm, "includes", {"number_words": True})
    assert changed["method"] == "includes" and changed["options"]["number_words"] is True
    with pytest.raises(InvalidInput):
        bg.set_scoring(bm, "includes", {"casing": True})
    assert bg.notifications()["email_on_finish"] is False
    assert bg.set_notifications(email_on_finish=True)["email_on_finish"] is True
    board = json.loads(bg.export_leaderboard(bm, "json"))
    assert board is not None
    reader = connect(server, world.token(ana, ["read"]))
    with pytest.raises(PermissionDenied):
        reader.set_scoring(bm, "exact")


def test_models_add_registers_an_endpoint_with_its_key_from_the_environment(
    world: World, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BENCHGEN_DATA_DIR", str(settings.data_dir))
    monkeypatch.setenv("BENCHGEN_DATABASE_URL", settings.resolved_database_url())
    monkeypatch.setenv("MY_KEY", "sk-test-1234567890abcdefghij")
    monkeypatch.setenv("BENCHGEN_MODEL_HOST_ALLOWLIST", "127.0.0.1")
    ana = world.user("ana@example.com")
    args = ["models", "add", "--as", "ana@example.com", "--name", "Mine"]
    args += ["--endpoint-model", "m", "--base-url", "http://127.0.0.1:9/v1"]
    added = CliRunner().invoke(cli, [*args, "--api-key-env", "MY_KEY"])
    assert added.exit_code == 0, added.output
    assert "sk-test" not in added.output
    mine = [m for m in world.do(Principal.web(ana), models.list_models) if m.name == "Mine"]
    assert len(mine) == 1
    unset = CliRunner().invoke(cli, [*args, "--api-key-env", "NOT_SET_ANYWHERE"])
    assert unset.exit_code != 0 and "NOT_SET_ANYWHERE is not set" in unset.output


def test_runs_with_settings_and_a_subset(server: TestClient, world: World) -> None:
    ana = world.user("ana@example.com", credits_=100)
    bm = world.benchmark(ana, QA)
    bg = connect(server, world.token(ana, ["read", "runs"]))
    first = {"kind": "first", "n": 1}
    estimate = bg.estimate(bm, "mdl_builtin_random", {"samples": 3}, first)
    assert estimate["question_count"] == 1
    run = bg.start_run(bm, "mdl_builtin_random", subset=first, settings={"seed": 7})
    assert run["partial"] is True and run["settings"]["seed"] == 7
    with pytest.raises(InvalidInput):
        bg.estimate(bm, "mdl_builtin_random", {"temperature": 0.5})  # a baseline samples nothing
