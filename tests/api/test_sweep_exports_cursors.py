"""A cursor a client forged with an id no database can store (a NUL, a lone surrogate): the
check in a cursor is no secret, so it must be refused as not a cursor (422), never a 500."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from fastapi.testclient import TestClient

from benchgen.api.paging import _check
from tests.api.test_flows import bearer, error_of
from tests.support import QA, World

pytestmark = pytest.mark.both_backends  # NUL failed on PostgreSQL, a lone surrogate on both
UNSTORABLE = ("run_\u0000", "run_\ud800")


def _forged(name: str, scope: str, key: list[Any]) -> str:
    body = json.dumps(key, separators=(",", ":")).encode()
    text = base64.urlsafe_b64encode(body).decode().rstrip("=")
    return f"{text}.{_check(name, scope, text)}"


@pytest.mark.parametrize("run_id", UNSTORABLE)
def test_a_leaderboard_cursor_with_an_unstorable_run_id_is_a_422(
    client: TestClient, world: World, run_id: str
) -> None:
    ana = world.user("ana@example.com")
    bm = world.benchmark(ana, QA)
    cursor = _forged("leaderboard", f"{bm}\0", [0.5, None, run_id])
    got = client.get(
        f"/api/v1/benchmarks/{bm}/leaderboard",
        params={"cursor": cursor},
        headers=bearer(world.token(ana, ["read"])),
    )
    assert error_of(got, 422, "invalid_input")["details"]["errors"][0]["loc"] == [
        "query",
        "cursor",
    ]


@pytest.mark.parametrize("run_id", UNSTORABLE)
def test_a_runs_list_cursor_with_an_unstorable_id_is_a_422(
    client: TestClient, world: World, run_id: str
) -> None:
    ana = world.user("ana@example.com")
    cursor = _forged("runs", "", ["2026-01-01T00:00:00+00:00", run_id])
    got = client.get(
        "/api/v1/runs", params={"cursor": cursor}, headers=bearer(world.token(ana, ["read"]))
    )
    error_of(got, 422, "invalid_input")
