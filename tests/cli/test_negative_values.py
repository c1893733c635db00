"""A negative number typed as a command's value reaches that value's own rules, never Click's
"No such option"."""

import pytest
from typer.testing import CliRunner

from benchgen.cli import app
from tests.support import QA, World

runner = CliRunner()
pytestmark = pytest.mark.usefixtures("cli_env")


def _said(*args: str) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code != 0, result.output
    return " ".join(result.output.split())


def test_a_negative_setting_meets_the_settings_rules() -> None:
    said = _said("admin", "set", "create_limit_per_day", "-1")
    assert "create_limit_per_day takes a whole number from 1" in said
    assert "No such option" not in said


def test_a_negative_decimal_setting_meets_the_settings_rules() -> None:
    said = _said("admin", "set", "agent_turn_cap_s", "-1.5")
    assert "agent_turn_cap_s takes a whole number" in said


def test_a_negative_run_quota_meets_the_quotas_rules(world: World) -> None:
    ana = world.user("ana@example.com")
    benchmark = world.benchmark(ana, QA)
    said = _said("admin", "set-run-quota", benchmark, "-3", "--as", "ana@example.com")
    assert "runs_per_day" in said and "must be a whole number from 1" in said


def test_negative_credits_meet_the_arguments_range() -> None:
    said = _said("admin", "grant-credits", "--email", "ana@example.com", "-5")
    assert "Invalid value for 'AMOUNT'" in said


def test_a_mistyped_option_is_still_named() -> None:
    said = _said("admin", "set", "create_limit_per_day", "5", "--bogus")
    assert "No such option: --bogus" in said
