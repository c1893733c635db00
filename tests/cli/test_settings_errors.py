"""A wrong `BENCHGEN_*` setting stops every command with one line naming it, and exit status 2."""

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer.main
from pydantic import ValidationError
from typer.testing import CliRunner

from benchgen.cli import app
from benchgen.cli.configuration import describe
from benchgen.core.config import Settings

runner = CliRunner()
AS = ("--as", "ana@example.com")
# One invocation of every command that reads the settings, with its required arguments.
INVOCATIONS = {
    "demo": ["demo"],
    "chat": ["chat", *AS, "-m", "hello"],
    "run": ["run", "--benchmark", "bm_x", "--model", "mdl_x", *AS],
    "rescore": ["rescore", "run_x", *AS],
    "worker": ["worker"],
    "serve": ["serve"],
    "db upgrade": ["db", "upgrade"],
    "admin create-user": ["admin", "create-user", "--email", "a@b.co", "--password", "x" * 12],
    "admin grant-credits": ["admin", "grant-credits", "--email", "a@b.co", "5"],
    "admin create-token": ["admin", "create-token", "--email", "a@b.co", "--scopes", "read"],
    "admin list-tokens": ["admin", "list-tokens", "--email", "a@b.co"],
    "admin revoke-token": ["admin", "revoke-token", "tok_x"],
    "admin disable-user": ["admin", "disable-user", "--email", "a@b.co"],
    "admin enable-user": ["admin", "enable-user", "--email", "a@b.co"],
    "admin grant-admin": ["admin", "grant-admin", "--email", "a@b.co"],
    "admin revoke-admin": ["admin", "revoke-admin", "--email", "a@b.co"],
    "admin settings": ["admin", "settings"],
    "admin set": ["admin", "set", "agent_allow_publish", "off"],
    "admin set-run-quota": ["admin", "set-run-quota", "bm_x", "3", *AS],
    "admin outbox": ["admin", "outbox"],
    "models list": ["models", "list", *AS],
    "models add": ["models", "add", *AS, "--name", "m", "--endpoint-model", "m"],
    "leaderboard add": ["leaderboard", "add", "run_x", *AS],
    "leaderboard remove": ["leaderboard", "remove", "run_x", *AS],
    "judge set": ["judge", "set", "bm_x", *AS, "--model", "m"],
    "judge again": ["judge", "again", "run_x", *AS],
    "scoring": ["scoring", "bm_x", *AS],
    "compare": ["compare", "run_a", "run_b", *AS],
    "benchmarks list": ["benchmarks", "list", *AS],
    "benchmarks upload": ["benchmarks", "upload", "bundle.zip", *AS],
    "benchmarks download-bundle": ["benchmarks", "download-bundle", "bm_x", *AS],
    "benchmarks submit": ["benchmarks", "submit", "bm_x", "results.zip", *AS],
    "benchmarks import": ["benchmarks", "import", "data.jsonl", *AS],
    "benchmarks export": ["benchmarks", "export", "bm_x", "--format", "jsonl", *AS],
    "datasets upload": ["datasets", "upload", "data.jsonl", *AS],
    "datasets list": ["datasets", "list", *AS],
    "datasets delete": ["datasets", "delete", "ds_x", "--yes", *AS],
    "admin add-local-model": ["admin", "add-local-model", "--name", "m", "--path", "smollm2"],
    "training plan": ["training", "plan", "--base", "mdl_x", "--dataset", "ds_x", *AS],
    "training start": ["training", "start", "--base", "mdl_x", "--dataset", "ds_x", *AS],
    "training list": ["training", "list", *AS],
    "training show": ["training", "show", "tr_x", *AS],
    "training cancel": ["training", "cancel", "tr_x", *AS],
    "training compute": ["training", "compute", *AS],
}


@pytest.fixture(autouse=True)
def _env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A private data dir: a command that wrongly went on would not touch a real database."""
    monkeypatch.setenv("BENCHGEN_DATA_DIR", str(tmp_path / "data"))
    # Commands that take a file check it exists before anything else.
    monkeypatch.chdir(tmp_path)
    for name in ("bundle.zip", "results.zip", "data.jsonl"):
        (tmp_path / name).write_bytes(b"")
    yield


def _leaf_commands(command: Any, path: tuple[str, ...] = ()) -> Iterator[str]:
    if not hasattr(command, "commands"):
        yield " ".join(path)
        return
    # Resolved as a command line would be: `benchgen` loads a command's module only then.
    context = command.context_class(command)
    for name in command.list_commands(context):
        yield from _leaf_commands(command.resolve_command(context, [name])[1], (*path, name))


def test_every_command_is_checked() -> None:
    assert set(_leaf_commands(typer.main.get_command(app))) == set(INVOCATIONS)


@pytest.mark.parametrize("name", sorted(INVOCATIONS))
def test_a_wrong_setting_is_one_line_and_exit_status_2(
    name: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("BENCHGEN_AGENT_TURN_CAP_S", "2")
    result = runner.invoke(app, INVOCATIONS[name])
    assert result.exit_code == 2, result.output
    assert result.output == "BENCHGEN_AGENT_TURN_CAP_S: must be at least 10 (got '2')\n"
    assert not (tmp_path / "data").exists()  # stopped before opening anything


@pytest.mark.parametrize(
    ("variable", "value", "line"),
    [
        ("BENCHGEN_WORKER_THREADS", "many", "BENCHGEN_WORKER_THREADS: must be a whole number"),
        ("BENCHGEN_AGENT_ALLOW_EDIT", "maybe", "BENCHGEN_AGENT_ALLOW_EDIT: must be true or false"),
        ("BENCHGEN_RUN_CONCURRENCY", "999", "BENCHGEN_RUN_CONCURRENCY: must be at most 256"),
        ("BENCHGEN_TOKEN_MAX_DAYS", "3000000", "BENCHGEN_TOKEN_MAX_DAYS: must be at most 36500"),
        ("BENCHGEN_AGENT_TURN_CAP_S", "86400", "BENCHGEN_AGENT_TURN_CAP_S: must be at most 3600"),
    ],
)
def test_each_problem_names_its_variable_and_value(
    variable: str, value: str, line: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(variable, value)
    result = runner.invoke(app, ["db", "upgrade"])
    assert result.exit_code == 2
    assert result.output == f"{line} (got '{value}')\n"


@pytest.mark.parametrize(
    ("settings", "line"),
    [
        (
            {"BENCHGEN_SECRET_KEY": "short"},
            "BENCHGEN_SECRET_KEY: must be a Fernet key: 32 bytes in URL-safe base64",
        ),
        (
            {"BENCHGEN_TOKEN_MAX_DAYS": "10"},
            "BENCHGEN_TOKEN_MAX_DAYS: must be at least BENCHGEN_TOKEN_DEFAULT_DAYS (90)",
        ),
        (
            {"BENCHGEN_SMTP_URL": "smtps://mail.example.org"},
            "BENCHGEN_SMTP_URL: must be smtp://[user:password@]host[:port] or smtp+starttls://",
        ),
        (
            {"BENCHGEN_TOKEN_DEFAULT_DAYS": "400"},
            "BENCHGEN_TOKEN_MAX_DAYS: must be at least BENCHGEN_TOKEN_DEFAULT_DAYS (400)",
        ),
        # In pydantic's words it had "at least 24 items".
        (
            {"BENCHGEN_METRICS_TOKEN": "short"},
            "BENCHGEN_METRICS_TOKEN: must be at least 24 characters",
        ),
        # Each of these was a traceback from every command.
        ({"BENCHGEN_DATABASE_URL": "garbage"}, "BENCHGEN_DATABASE_URL: must be sqlite:///PATH"),
        ({"BENCHGEN_DATABASE_URL": "mysql://u@h/db"}, "BENCHGEN_DATABASE_URL: must be sqlite"),
        ({"BENCHGEN_DATABASE_URL": "sqlite://"}, "BENCHGEN_DATABASE_URL: names no file"),
        # `benchgen worker --threads` is bounded; the workers `serve` starts were not.
        ({"BENCHGEN_WORKER_THREADS": "100000"}, "BENCHGEN_WORKER_THREADS: "),
        ({"BENCHGEN_DATABASE_URL": "sqlite:///:memory:"}, "BENCHGEN_DATABASE_URL: names no file"),
        (
            {"BENCHGEN_DATABASE_URL": "postgresql+psycopg://u@h:port/db"},
            "BENCHGEN_DATABASE_URL: has a port that is not a number",
        ),
    ],
)
def test_settings_that_would_fail_later_are_refused_at_the_start(
    settings: dict[str, str], line: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A wrong key was a 500 at a user's first saved API key; a default token life above the
    maximum refused every token made without one."""
    for variable, value in settings.items():
        monkeypatch.setenv(variable, value)
    result = runner.invoke(app, ["db", "upgrade"])
    assert result.exit_code == 2
    assert result.output.startswith(line) and "short" not in result.output


def test_a_good_secret_key_is_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BENCHGEN_SECRET_KEY", "A" * 43 + "=")
    assert runner.invoke(app, ["db", "upgrade"]).exit_code == 0


@pytest.mark.parametrize(
    ("variable", "value", "said"),
    [
        (
            "BENCHGEN_DATABASE_URL",
            "postgresql+psycopg://ana:hunter22@127.0.0.1:1/db",
            "cannot open the database postgresql+psycopg://ana:***@127.0.0.1:1/db",
        ),
        (
            "BENCHGEN_DATABASE_URL",
            "sqlite:////proc",
            "cannot open the database sqlite:////proc",
        ),
        ("BENCHGEN_DATA_DIR", "/proc/no-such-folder", "cannot use /proc/no-such-folder"),
    ],
)
def test_a_database_that_cannot_be_opened_is_one_line_naming_the_setting(
    variable: str, value: str, said: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(variable, value)
    result = runner.invoke(app, ["admin", "settings"])
    assert result.exit_code == 1
    text = " ".join(result.output.split())
    assert text.startswith(f"Error: {said}") and f"check {variable}" in text
    assert "Traceback" not in text and "hunter22" not in text


def test_two_wrong_settings_are_two_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BENCHGEN_AGENT_TURN_CAP_S", "2")
    monkeypatch.setenv("BENCHGEN_TOKEN_MAX_DAYS", "0")
    result = runner.invoke(app, ["db", "upgrade"])
    assert result.exit_code == 2
    assert sorted(result.output.splitlines()) == [
        "BENCHGEN_AGENT_TURN_CAP_S: must be at least 10 (got '2')",
        "BENCHGEN_TOKEN_MAX_DAYS: must be at least 1 (got '0')",
    ]


def test_a_text_setting_is_named_but_its_value_never_echoed() -> None:
    # A text setting may hold a credential; the line goes to terminals and logs.
    with pytest.raises(ValidationError) as caught:
        Settings.model_validate({"secret_key": ["sk-live-123"], "database_url": 5})
    lines = describe(caught.value)
    assert [line.split(":")[0] for line in lines] == [
        "BENCHGEN_DATABASE_URL",
        "BENCHGEN_SECRET_KEY",
    ]
    assert all("sk-live" not in line and "got" not in line for line in lines)
