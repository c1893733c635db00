"""`benchgen judge again`: a completed run's failed judging done again from the terminal, here
(the default) or by a worker later, and the service's refusals as one line."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from benchgen.cli import app
from benchgen.core.context import Principal
from benchgen.services.runs import results
from benchgen.services.runtime import Runtime
from tests.evals.stub_openai import StubOpenAI
from tests.services import test_rejudging
from tests.services.test_rejudging import Script, judged_run
from tests.support import World

runner = CliRunner()
script = test_rejudging.script  # fixtures shared with the service tests
stub = test_rejudging.stub

pytestmark = pytest.mark.usefixtures("cli_env")


@pytest.fixture(autouse=True)
def open_loopback(monkeypatch: pytest.MonkeyPatch) -> None:
    """The command's own runtime may reach the stub judge on 127.0.0.1 too."""
    monkeypatch.setenv("BENCHGEN_MODEL_HOST_ALLOWLIST", "127.0.0.1")


def _outcomes(world: World, user_id: str, run_id: str) -> list[str]:
    rows = world.do(Principal.web(user_id), results.list_results, run_id)
    return [row["outcome"] for row in rows]


def test_judge_again_judges_here_and_says_the_new_accuracy(
    world: World, runtime: Runtime, stub: StubOpenAI, script: Script
) -> None:
    made = judged_run(world, runtime, stub)
    script.up = True
    done = runner.invoke(app, ["judge", "again", made.run, "--as", "ana@example.com"])
    assert done.exit_code == 0, done.output
    assert "3 answers went back to the AI judge." in done.output
    assert "Judged again: accuracy 66.7%; 0 answers still failed their judging." in done.output
    assert _outcomes(world, made.ana, made.run) == ["correct", "correct", "wrong"]
    again = runner.invoke(app, ["judge", "again", made.run, "--as", "ana@example.com"])
    assert again.exit_code == 1 and "nothing to judge again" in " ".join(again.output.split())
    assert "Traceback" not in again.output


def test_judge_again_without_waiting_leaves_it_to_a_worker(
    world: World, runtime: Runtime, stub: StubOpenAI
) -> None:
    made = judged_run(world, runtime, stub)
    queued = runner.invoke(
        app, ["judge", "again", made.run, "--no-wait", "--as", "ana@example.com"]
    )
    assert queued.exit_code == 0, queued.output
    assert queued.output.strip() == "3 answers went back to the AI judge."
    assert _outcomes(world, made.ana, made.run) == ["pending"] * 3


def test_judge_again_for_someone_who_may_not_is_refused(
    world: World, runtime: Runtime, stub: StubOpenAI
) -> None:
    made = judged_run(world, runtime, stub)
    world.user("sam@example.com")
    refused = runner.invoke(app, ["judge", "again", made.run, "--as", "sam@example.com"])
    assert refused.exit_code == 1 and "Error:" in refused.output
    assert _outcomes(world, made.ana, made.run) == ["error"] * 3


def test_the_judge_group_lists_again() -> None:
    shown = runner.invoke(app, ["judge", "--help"])
    assert shown.exit_code == 0 and "again" in shown.output and "set" in shown.output
