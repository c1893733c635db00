"""Output sent to a pipe or a file keeps each table row and the agent's reply on whole lines."""

import pytest
from typer.testing import CliRunner

from benchgen.agent import brains
from benchgen.cli import app
from tests.agent.scripted import Script
from tests.support import World

runner = CliRunner()  # its output is not a terminal, as a pipe's is not
LONG = ("named at such length that no terminal would show its row on one line " * 2).strip()
pytestmark = pytest.mark.usefixtures("cli_env")


@pytest.fixture(autouse=True)
def _no_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)


def test_a_piped_table_keeps_each_row_on_one_line(world: World) -> None:
    world.user("ana@example.com")
    made = ["admin", "create-token", "--email", "ana@example.com", "--scopes", "read"]
    assert runner.invoke(app, [*made, "--name", LONG]).exit_code == 0
    result = runner.invoke(app, ["admin", "list-tokens", "--email", "ana@example.com"])
    assert result.exit_code == 0, result.output
    row = next(line for line in result.output.splitlines() if "tok_" in line)
    assert LONG in row and "read" in row


def test_columns_still_sets_the_width_of_a_pipe(world: World) -> None:
    world.user("ana@example.com")
    made = ["admin", "create-token", "--email", "ana@example.com", "--scopes", "read"]
    assert runner.invoke(app, [*made, "--name", LONG]).exit_code == 0
    listed = ["admin", "list-tokens", "--email", "ana@example.com"]
    result = runner.invoke(app, listed, env={"COLUMNS": "100"})
    assert max(len(line) for line in result.output.splitlines()) == 100


def test_a_piped_reply_fits_its_panel(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    world.user("ana@example.com")
    brain = Script([LONG]).brain()
    monkeypatch.setattr(brains, "configured_brain", lambda settings: brain)
    result = runner.invoke(app, ["chat", "--as", "ana@example.com", "-m", "hello"])
    assert result.exit_code == 0, result.output
    panel = [line for line in result.output.splitlines() if line.startswith(("╭", "│", "╰"))]
    assert any(LONG in line for line in panel)
    assert {len(line) for line in panel} == {len(LONG) + 4}
