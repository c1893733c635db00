"""`benchgen run --as` for a participant the owner removed from a published benchmark: refused,
saying why; a stranger's run on it goes on."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from benchgen.cli import app
from benchgen.core.context import Principal
from benchgen.services.benchmarks import lifecycle, members
from tests.support import MCQ, World

runner = CliRunner()
pytestmark = pytest.mark.usefixtures("cli_env")


def test_a_removed_participant_cannot_run_from_the_terminal(world: World) -> None:
    ana = world.user("ana@example.com")
    bob = world.user("bob@example.com", credits_=100)
    world.user("cy@example.com", credits_=100)
    bm = world.benchmark(ana, MCQ)
    world.do(Principal.web(ana), lifecycle.publish_benchmark, bm)
    world.do(Principal.web(bob), members.join_benchmark, bm, True)
    world.do(Principal.web(ana), members.set_participant_status, bm, bob, "removed")

    def run_as(email: str) -> tuple[int, str]:
        args = ["run", "--benchmark", bm, "--model", "mdl_builtin_first", "--as", email]
        result = runner.invoke(app, [*args, "--no-wait"])
        return result.exit_code, result.output

    code, output = run_as("bob@example.com")
    assert code == 1 and "the owner removed you from this benchmark" in output, output
    code, output = run_as("cy@example.com")
    assert code == 0 and "queued" in output, output
