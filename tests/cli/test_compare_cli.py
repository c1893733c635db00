"""`benchgen compare`: two runs side by side on this machine (`--as`) and through a server's API
(`--url`), as tables or JSON."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from benchgen.app import create_app
from benchgen.cli import app
from benchgen.core.context import Principal
from benchgen.services.benchmarks import lifecycle
from benchgen.services.runs import leaderboards
from benchgen.services.runtime import Runtime
from tests.client.relay import served_to_the_cli
from tests.services.test_compare import FIRST, RANDOM, TWELVE, finished
from tests.support import MCQ, World

runner = CliRunner()
WIDE = {"COLUMNS": "200"}


pytestmark = pytest.mark.usefixtures("cli_env")


@pytest.fixture
def two_runs(world: World, runtime: Runtime) -> tuple[str, str, str]:
    """(owner id, run A, run B): two finished runs of the owner's benchmark."""
    owner = world.user("owner@example.com")
    benchmark = world.benchmark(owner, TWELVE)
    return (
        owner,
        finished(world, runtime, owner, benchmark, FIRST),
        finished(world, runtime, owner, benchmark, RANDOM),
    )


def test_help_names_the_figures_and_where() -> None:
    shown = runner.invoke(app, ["compare", "--help"], env=WIDE)
    assert shown.exit_code == 0
    for needed in ("McNemar", "bootstrap", "RUN_A", "RUN_B", "--as", "--url", "--json"):
        assert needed in shown.output


def test_the_owner_sees_the_figures_and_the_tags(two_runs: tuple[str, str, str]) -> None:
    _, run_a, run_b = two_runs
    shown = runner.invoke(app, ["compare", run_a, run_b, "--as", "owner@example.com"], env=WIDE)
    assert shown.exit_code == 0, shown.output
    for needed in (
        "12 questions answered by both",
        "33.3%",  # "always A" on keys A, B, C in turn
        "difference",
        "95% interval",
        "McNemar exact p",
        "both right",
        "only B right",
        "By tag",
        "group0",
        "three",
    ):
        assert needed in shown.output, needed


def test_json_carries_every_figure_and_the_items(two_runs: tuple[str, str, str]) -> None:
    _, run_a, run_b = two_runs
    shown = runner.invoke(
        app, ["compare", run_a, run_b, "--as", "owner@example.com", "--json"], env=WIDE
    )
    assert shown.exit_code == 0, shown.output
    found = json.loads(shown.output)
    assert (found["run_a"], found["run_b"], found["n"]) == (run_a, run_b, 12)
    assert len(found["items"]) == 12 and found["tags"]


def test_a_score_corrected_by_hand_is_said_in_the_table_and_the_json(
    world: World, two_runs: tuple[str, str, str]
) -> None:
    """The figures come from the answers; a run's official score may have been corrected by
    hand since, which only the web page said."""
    owner, run_a, run_b = two_runs
    plain = ["compare", run_a, run_b, "--as", "owner@example.com"]
    assert "corrected by hand" not in runner.invoke(app, plain, env=WIDE).output
    reason = "the key of question 3 was wrong"
    world.do(Principal.web(owner), leaderboards.edit_run_score, run_b, {"accuracy": 0.5}, reason)
    shown = runner.invoke(app, plain, env=WIDE)
    assert "Run B: its official score was corrected by hand" in shown.output
    found = json.loads(runner.invoke(app, [*plain, "--json"], env=WIDE).output)
    assert (found["edited_a"], found["edited_b"]) == (False, True)


def test_a_stranger_is_refused(world: World, runtime: Runtime) -> None:
    owner = world.user("owner@example.com")
    benchmark = world.benchmark(owner, TWELVE)
    world.do(Principal.web(owner), lifecycle.publish_benchmark, benchmark)
    stranger = world.user("stranger@example.com")
    run_a = finished(world, runtime, stranger, benchmark, FIRST)
    run_b = finished(world, runtime, stranger, benchmark, RANDOM)
    shown = runner.invoke(app, ["compare", run_a, run_b, "--as", "stranger@example.com"], env=WIDE)
    assert shown.exit_code == 1, shown.output
    assert "owner and collaborators compare runs" in " ".join(shown.output.split())
    assert "McNemar" not in shown.output


def test_runs_that_do_not_compare_end_with_the_reason(world: World, runtime: Runtime) -> None:
    owner = world.user("owner@example.com")
    run_a = finished(world, runtime, owner, world.benchmark(owner, TWELVE), FIRST)
    run_b = finished(world, runtime, owner, world.benchmark(owner, MCQ), FIRST)
    shown = runner.invoke(app, ["compare", run_a, run_b, "--as", "owner@example.com"], env=WIDE)
    assert shown.exit_code == 1 and "different benchmarks" in shown.output
    missing = runner.invoke(app, ["compare", "run_x", run_b, "--as", "owner@example.com"])
    assert missing.exit_code == 1 and "No such run" in missing.output
    neither = runner.invoke(app, ["compare", run_a, run_b])
    assert neither.exit_code == 2 and "--as" in neither.output


def test_remote_compare_through_the_api(
    world: World,
    runtime: Runtime,
    two_runs: tuple[str, str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    owner, run_a, run_b = two_runs
    secret = world.token(owner, ["read"])
    with served_to_the_cli(create_app(runtime.settings, runtime), monkeypatch, secret) as there:
        shown = runner.invoke(app, ["compare", run_a, run_b, *there], env=WIDE)
        assert shown.exit_code == 0, shown.output
        assert "McNemar exact p" in shown.output and "By tag" in shown.output
        refused = runner.invoke(app, ["compare", run_a, "run_nowhere", *there], env=WIDE)
        assert refused.exit_code == 1 and "No such run" in refused.output
