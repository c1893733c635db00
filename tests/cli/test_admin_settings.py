"""`benchgen admin settings` shows the agent's brain, never its key or a password in its URL."""

import pytest
from typer.testing import CliRunner

from benchgen.cli import app

runner = CliRunner()
pytestmark = pytest.mark.usefixtures("cli_env")


@pytest.fixture(autouse=True)
def _no_brain_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    """None of the caller's brain settings (a developer's shell may set them)."""
    for variable in ("BENCHGEN_AGENT_BASE_URL", "BENCHGEN_AGENT_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(variable, raising=False)


def test_settings_name_the_agents_brain_but_not_its_secrets(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("BENCHGEN_AGENT_MODEL", "openai:qwen2.5-7b")
    monkeypatch.setenv("BENCHGEN_AGENT_BASE_URL", "http://ops:hunter22@127.0.0.1:8011/v1?key=kk9")
    monkeypatch.setenv("BENCHGEN_AGENT_API_KEY", "sk-very-secret")
    result = runner.invoke(app, ["admin", "settings"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert "agent_model = openai:qwen2.5-7b" in lines
    assert "agent_base_url = http://127.0.0.1:8011/v1" in lines
    assert "agent_api_key = (set)" in lines
    for secret in ("sk-very-secret", "hunter22", "kk9"):
        assert secret not in result.output


def test_settings_say_when_the_brain_is_the_default() -> None:
    result = runner.invoke(app, ["admin", "settings"])
    assert "agent_model = offline" in result.output.splitlines()
    assert "agent_api_key = (unset)" in result.output.splitlines()


def test_settings_say_whether_the_providers_own_key_is_there(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("BENCHGEN_AGENT_MODEL", "openai:gpt-4o-mini")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-providers-own")
    result = runner.invoke(app, ["admin", "settings"])
    assert "agent_api_key = (unset); OPENAI_API_KEY is set" in result.output.splitlines()
    assert "sk-providers-own" not in result.output


def test_setting_the_brain_says_it_is_the_environments() -> None:
    result = runner.invoke(app, ["admin", "set", "agent_model", "openai:gpt-4o-mini"])
    assert result.exit_code == 1
    assert "BENCHGEN_AGENT_MODEL in the environment" in " ".join(result.output.split())
