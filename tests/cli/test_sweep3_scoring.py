"""`benchgen scoring --option` names the option whose value it cannot read."""

import pytest
from typer.testing import CliRunner

from benchgen.cli import app
from tests.support import World

runner = CliRunner()
pytestmark = pytest.mark.usefixtures("cli_env")


def test_an_unreadable_option_value_names_the_option_that_holds_it(world: World) -> None:
    ana = world.user("ana@example.com")
    bm = world.benchmark(ana)
    options = ["--option", "case=true", "--option", "number_words=maybe"]
    result = runner.invoke(app, ["scoring", bm, "--as", "ana@example.com", *options])
    assert result.exit_code == 2, result.output
    said = " ".join(result.output.split())
    # It said "Invalid value: 'maybe'": neither the option nor which of the two.
    assert "--option" in said and "'number_words=maybe'" in said
