"""A run's page shows a participant their run's visible columns only; the owner sees them all."""

from __future__ import annotations

from fastapi.testclient import TestClient

from benchgen.app import create_app
from benchgen.services.runtime import Runtime
from tests.services.test_hidden_columns import SECRET, SHOWN, board_with_hidden_column
from tests.support import World
from tests.web.support import WebUser


def test_a_participants_run_page_leaves_the_hidden_column_out(
    world: World, runtime: Runtime
) -> None:
    board = board_with_hidden_column(world, runtime)
    path = f"/runs/{board.participants_run}"
    pages = {}
    for email in ("sam@example.com", "ana@example.com"):
        with TestClient(create_app(runtime.settings, runtime), follow_redirects=False) as client:
            pages[email] = WebUser.sign_in(client, email).page(path).get_text(" ")
    theirs, owners = pages["sam@example.com"], pages["ana@example.com"]
    assert "Accuracy" in theirs and f"{SHOWN:g}" in theirs
    assert "Secret" not in theirs and "secret" not in theirs and f"{SECRET:g}" not in theirs
    assert f"{SECRET:g}" in owners and "Secret (hidden from participants)" in owners
