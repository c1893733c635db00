"""A list with nothing in it says so, and what makes its first entry, rather than printing a
grid of headers alone."""

import pytest
from typer.testing import CliRunner

from benchgen.cli import app
from tests.support import World

runner = CliRunner()
pytestmark = pytest.mark.usefixtures("cli_env")
HERE = ["--as", "ana@example.com"]


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["benchmarks", "list", *HERE], "No benchmarks yet: `benchgen benchmarks import FILE`"),
        (["benchmarks", "list", "--search", "capitals", *HERE], "No benchmark matches."),
        (["datasets", "list", *HERE], "No datasets yet: `benchgen datasets upload FILE`"),
        (["training", "list", *HERE], "No training jobs yet: `benchgen training plan`"),
        (["admin", "list-tokens", "--email", "ana@example.com"], "ana@example.com has no tokens"),
        (["admin", "outbox"], "The outbox is empty."),
    ],
    ids=lambda value: " ".join(value[:2]) if isinstance(value, list) else "",
)
def test_an_empty_list_says_so(world: World, args: list[str], said: str) -> None:
    world.user("ana@example.com")
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert result.output.startswith(said) and "┏" not in result.output
