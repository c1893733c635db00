"""From the terminal: models list the formats they answer, and only those are run."""

from collections.abc import Iterator

import pytest
from typer.testing import CliRunner

from benchgen.cli import app
from benchgen.core.config import Settings
from tests.support import MCQ, QA, World

runner = CliRunner()
AS = ["--as", "ana@example.com"]


@pytest.fixture(autouse=True)
def _env(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Point the CLI (which reads BENCHGEN_* variables) at the test's database."""
    monkeypatch.setenv("BENCHGEN_DATA_DIR", str(settings.data_dir))
    monkeypatch.setenv("BENCHGEN_DATABASE_URL", settings.resolved_database_url())
    monkeypatch.setenv("BENCHGEN_ARGON2_TIME_COST", "1")
    monkeypatch.setenv("BENCHGEN_ARGON2_MEMORY_KIB", "64")
    monkeypatch.setenv("COLUMNS", "200")  # one row per model, whatever the terminal
    yield


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
    assert refused.exit_code == 1
    assert "answers only mcq benchmarks; this benchmark is qa" in " ".join(refused.output.split())
