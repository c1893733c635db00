"""The CLI's refusals say in words what failed and where, as the user typed or sees it."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from benchgen.cli import app
from benchgen.services.accounts import users
from tests.support import OPERATOR, World

runner = CliRunner()
WIDE = {"COLUMNS": "200"}


pytestmark = pytest.mark.usefixtures("cli_env")


def _zip(files: dict[str, str]) -> bytes:
    packed = io.BytesIO()
    with zipfile.ZipFile(packed, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return packed.getvalue()


def test_a_place_in_an_archive_shows_its_path_plainly(world: World, tmp_path: Path) -> None:
    world.user("ana@example.com")
    path = tmp_path / "evil.zip"
    path.write_bytes(_zip({"competition.yaml": "title: x\n", "../evil.txt": "x"}))
    shown = runner.invoke(app, ["benchmarks", "upload", str(path), "--as", "ana@example.com"])
    assert shown.exit_code == 1
    assert "Error: bundle ../evil.txt: " in shown.output, shown.output


def test_a_local_model_refusal_names_the_option_typed() -> None:
    shown = runner.invoke(
        app, ["admin", "add-local-model", "--name", "x", "--path", "/nonexistent"], env=WIDE
    )
    assert shown.exit_code == 2
    assert "Error: --path: must be a Hugging Face model folder" in shown.output, shown.output
    assert "endpoint_model" not in shown.output


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("http://127.0.0.1:9", "cannot connect to http://127.0.0.1:9 ("),
        # Refused before anything is sent: a usage error (exit 2).
        ("ftp://127.0.0.1", "Give the server's address with http:// or https:// at its start"),
    ],
)
def test_a_remote_failure_says_what_failed(tmp_path: Path, url: str, said: str) -> None:
    path = tmp_path / "tiny.zip"
    path.write_bytes(_zip({"competition.yaml": "title: x\n"}))
    command = ["benchmarks", "upload", str(path), "--url", url, "--token", "bgp_x"]
    shown = runner.invoke(app, command, env=WIDE)
    assert shown.exit_code == (1 if url.startswith("http") else 2)
    assert f"Error: {said}" in shown.output, shown.output


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("http://bob:s3cret@127.0.0.1:9", "Give the server's address without a user name"),
        ("http://127.0.0.1:port", "The server's address cannot be read: Invalid port"),
    ],
)
def test_a_remote_address_is_checked_before_anything_is_sent(url: str, said: str) -> None:
    command = ["benchmarks", "list", "--url", url, "--token", "bgp_x"]
    shown = runner.invoke(app, command, env=WIDE)
    # Not a traceback, and the password is not repeated (httpx sent it as Basic credentials in
    # place of the token, and every error named the address with it).
    assert shown.exit_code == 2, shown.output
    assert f"Error: {said}" in shown.output and "s3cret" not in shown.output, shown.output


def test_create_user_asks_for_the_password_hidden_and_twice(world: World) -> None:
    command = ["admin", "create-user", "--email", "bea@example.com"]
    mismatched = runner.invoke(app, command, input="longpassword\nother-password\n")
    assert mismatched.exit_code != 0 and "Created" not in mismatched.output
    made = runner.invoke(app, command, input="longpassword\nlongpassword\n")
    assert made.exit_code == 0, made.output
    assert "Password:" in made.output and "longpassword" not in made.output  # never echoed
    user = world.do(OPERATOR, users.authenticate, "bea@example.com", "longpassword")
    assert user.email == "bea@example.com"
