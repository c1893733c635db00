"""`benchgen benchmarks submit --wait` prints a participant their run's visible columns only."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from benchgen.cli import app
from tests.bundle_factory import ANSWERS, results
from tests.services.test_hidden_columns import joined_with_hidden_column
from tests.support import World

runner = CliRunner()
WIDE = {"COLUMNS": "200"}

pytestmark = pytest.mark.usefixtures("cli_env")


def test_submit_wait_hides_the_hidden_column_from_a_participant(
    world: World, tmp_path: Path
) -> None:
    ana, bob = world.user("ana@example.com"), world.user("bob@example.com")
    bm = joined_with_hidden_column(world, ana, bob)
    answer = tmp_path / "answer.zip"
    answer.write_bytes(results(ANSWERS))

    def submitted(email: str) -> str:
        sent = runner.invoke(
            app, ["benchmarks", "submit", bm, str(answer), "--wait", "--as", email], env=WIDE
        )
        assert sent.exit_code == 0, sent.output
        return sent.output

    theirs = submitted("bob@example.com")
    assert "completed" in theirs and "accuracy" in theirs and "errors" not in theirs
    assert "errors" in submitted("ana@example.com")
