"""`models add` and `judge set` place a refusal by the option typed, not the service's field."""

import pytest
from typer.testing import CliRunner

from benchgen.cli import app
from benchgen.core.context import Principal
from benchgen.services.datasets import datasets
from tests.support import QA, World

runner = CliRunner()
pytestmark = pytest.mark.usefixtures("cli_env")
LOOPBACK = "http://127.0.0.1:9/v1"  # refused before anything is asked of it


def _refusal(*args: str) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 2, result.output  # a refused option value is a usage error
    return " ".join(result.output.split())


def test_models_add_names_the_option(world: World) -> None:
    world.user("ana@example.com")
    added = ["models", "add", "--as", "ana@example.com", "--name", "Mine", "--endpoint-model", "m"]
    assert _refusal(*added, "--base-url", LOOPBACK).startswith("Error: --base-url: ")
    assert _refusal(*added, "--kind", "bogus").startswith("Error: --kind: ")


def test_judge_set_names_the_option(world: World) -> None:
    ana = world.user("ana@example.com")
    benchmark = world.benchmark(ana, QA)
    judged = ["judge", "set", benchmark, "--as", "ana@example.com", "--model", "judge-model"]
    assert _refusal(*judged, "--base-url", LOOPBACK).startswith("Error: --base-url: ")
    assert _refusal(*judged, "--kind", "bogus").startswith("Error: --kind: ")


def test_an_unset_key_variable_says_how_to_set_it(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    ana = world.user("ana@example.com")
    benchmark = world.benchmark(ana, QA)
    monkeypatch.delenv("UNSET_KEY", raising=False)
    judged = ["judge", "set", benchmark, "--as", "ana@example.com", "--model", "m"]
    added = ["models", "add", "--as", "ana@example.com", "--name", "Mine", "--endpoint-model", "m"]
    for args in (judged, added):
        result = runner.invoke(app, [*args, "--api-key-env", "UNSET_KEY"], env={"COLUMNS": "300"})
        assert result.exit_code == 2, result.output
        assert "`read -rs UNSET_KEY; export UNSET_KEY`" in result.output


def test_training_names_the_option(world: World) -> None:
    ana = world.user("ana@example.com")
    rows = b'{"prompt": "Q", "completion": "A"}\n'
    data = world.do(Principal.web(ana), datasets.upload_dataset, rows, "d.jsonl", {"name": "D"})
    planned = ["training", "plan", "--as", "ana@example.com", "--dataset", data.id]
    baseline = _refusal(*planned, "--base", "mdl_builtin_random")
    assert baseline.startswith("Error: --base: 'Baseline: seeded random' is a builtin model")
    unknown = runner.invoke(app, [*planned, "--base", "mdl_x", "--set", "epoch=2"])
    assert unknown.exit_code == 2
    assert " ".join(unknown.output.split()).startswith(
        "Error: --set epoch: no such hyperparameter; give one of epochs, learning_rate"
    )


@pytest.mark.parametrize("option", ["--first", "--random"])
def test_run_names_the_subset_option_typed(world: World, option: str) -> None:
    ana = world.user("ana@example.com")
    benchmark = world.benchmark(ana, QA)
    ran = ["run", "--benchmark", benchmark, "--model", "mdl_builtin_random", option, "0"]
    assert _refusal(*ran, "--as", "ana@example.com").startswith(f"Error: {option}: ")
