"""From the terminal: models list the formats they answer, and only those are run."""

import pytest
from typer.testing import CliRunner

from benchgen.cli import app
from tests.support import MCQ, QA, World

runner = CliRunner()
AS = ["--as", "ana@example.com"]


@pytest.fixture(autouse=True)
def _wide(cli_env: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # one row per model, whatever the terminal


def test_models_for_a_benchmark_and_a_refused_run(world: World) -> None:
    ana = world.user("ana@example.com")
    capitals, colours = world.benchmark(ana, QA), world.benchmark(ana, MCQ)
    for_qa = runner.invoke(app, ["models", "list", *AS, "--benchmark", capitals])
    assert for_qa.exit_code == 0, for_qa.output
    assert "mdl_builtin_random" in for_qa.output and "mdl_builtin_first" not in for_qa.output
    for_mcq = runner.invoke(app, ["models", "list", *AS, "--benchmark", colours]).output
    assert "always the first choice (mcq only)" in for_mcq
    assert "random (" not in for_mcq  # a model that answers every format says nothing more
    refused = runner.invoke(
        app, ["run", "--benchmark", capitals, "--model", "mdl_builtin_first", *AS]
    )
    assert refused.exit_code == 2
    assert "answers only mcq benchmarks; this benchmark is qa" in " ".join(refused.output.split())
