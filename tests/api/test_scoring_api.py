"""`/api/v1/benchmarks/{id}/scoring` and `benchgen scoring`: read and change how future runs are
scored; every problem is named; custom benchmarks are scored by their bundle."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from benchgen.cli import app as cli
from benchgen.core.config import Settings
from benchgen.core.context import Principal
from benchgen.services.benchmarks import scoring
from tests.support import MCQ, QA, World


def _bearer(world: World, user: str, scopes: list[str]) -> dict[str, str]:
    return {"Authorization": f"Bearer {world.token(user, scopes)}"}


def test_read_then_change_the_scoring(client: TestClient, world: World) -> None:
    ana = world.user("ana@example.com")
    bm = world.benchmark(ana, QA)
    editor = _bearer(world, ana, ["read", "edit"])
    url = f"/api/v1/benchmarks/{bm}/scoring"
    assert client.get(url, headers=editor).json()["method"] == "exact"
    changed = client.put(
        url, json={"method": "includes", "options": {"number_words": True}}, headers=editor
    )
    assert changed.status_code == 200, changed.text
    assert changed.json()["options"]["number_words"] is True
    assert changed.json()["options"]["articles"] is True  # the rest keep their defaults
    bad = client.put(url, json={"method": "includes", "options": {"casing": True}}, headers=editor)
    assert bad.status_code == 422 and "casing" in bad.json()["error"]["message"]
    mcq = world.benchmark(ana, MCQ)
    wrong = client.put(
        f"/api/v1/benchmarks/{mcq}/scoring", json={"method": "includes"}, headers=editor
    )
    assert wrong.status_code == 422
    reader = _bearer(world, ana, ["read"])
    assert client.put(url, json={"method": "exact"}, headers=reader).status_code == 403


def test_a_stranger_can_neither_read_nor_change_a_private_benchmarks_scoring(
    client: TestClient, world: World
) -> None:
    bm = world.benchmark(world.user("ana@example.com"), QA)
    bob = _bearer(world, world.user("bob@example.com"), ["read", "edit"])
    assert client.get(f"/api/v1/benchmarks/{bm}/scoring", headers=bob).status_code == 404
    put = client.put(f"/api/v1/benchmarks/{bm}/scoring", json={"method": "f1"}, headers=bob)
    assert put.status_code == 404


def test_the_cli_shows_and_sets_the_scoring(
    world: World, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BENCHGEN_DATA_DIR", str(settings.data_dir))
    monkeypatch.setenv("BENCHGEN_DATABASE_URL", settings.resolved_database_url())
    ana = world.user("ana@example.com")
    bm = world.benchmark(ana, QA)
    runner = CliRunner()
    shown = runner.invoke(cli, ["scoring", bm, "--as", "ana@example.com"])
    assert shown.exit_code == 0 and '"exact"' in shown.output, shown.output
    args = ["scoring", bm, "--method", "includes", "--option", "number_words=true"]
    changed = runner.invoke(cli, [*args, "--as", "ana@example.com"])
    assert changed.exit_code == 0, changed.output
    now = world.do(Principal.web(ana), scoring.get_scoring, bm)
    assert now["method"] == "includes" and now["options"]["number_words"] is True
    bad = runner.invoke(cli, ["scoring", bm, "--option", "oops", "--as", "ana@example.com"])
    assert bad.exit_code != 0 and "NAME=VALUE" in bad.output
