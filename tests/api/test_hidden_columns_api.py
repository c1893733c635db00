"""The run API shows a participant their run's visible columns only; the owner sees them all."""

from __future__ import annotations

from fastapi.testclient import TestClient

from benchgen.core.permissions import Scope
from benchgen.services.runtime import Runtime
from tests.services.test_hidden_columns import SECRET, SHOWN, board_with_hidden_column
from tests.support import World


def test_a_participants_run_reads_without_the_hidden_column(
    client: TestClient, world: World, runtime: Runtime
) -> None:
    board = board_with_hidden_column(world, runtime)
    scopes = sorted(s.value for s in Scope)

    def read(user_id: str, path: str) -> str:
        auth = {"Authorization": f"Bearer {world.token(user_id, scopes)}"}
        got = client.get(path, headers=auth)
        assert got.status_code == 200, got.text
        return got.text

    path = f"/api/v1/runs/{board.participants_run}"
    theirs = read(board.participant, path)
    assert client.get(path).status_code == 401  # no token: nothing read
    assert f'"accuracy":{SHOWN}' in theirs and "secret" not in theirs and str(SECRET) not in theirs
    listed = read(board.participant, "/api/v1/runs")
    assert board.participants_run in listed and str(SECRET) not in listed
    owners = read(board.owner, path)
    assert f'"secret":{SECRET}' in owners
