"""`benchgen admin …` account commands: refusals name the option typed, and addresses typed
the way terminals write them find their account."""

from __future__ import annotations

import unicodedata

import pytest
from typer.testing import CliRunner

from benchgen.cli import app
from benchgen.core.context import Principal
from benchgen.services.accounts import credits
from tests.support import World

runner = CliRunner()
pytestmark = pytest.mark.usefixtures("cli_env")


def _said(*args: str, code: int = 1) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == code, result.output
    return " ".join(result.output.split())


def test_a_bad_display_name_is_said_by_its_option(world: World) -> None:
    said = _said(
        "admin", "create-user", "--email", "b@example.com", "--password", "password123",
        "--name", "\x1b[2Jred", code=2,
    )  # fmt: skip
    assert "--name: must not contain U+001B" in said
    assert "display_name" not in said


def test_a_too_large_grant_is_said_by_its_argument(world: World) -> None:
    world.user("ana@example.com")
    said = _said("admin", "grant-credits", "--email", "ana@example.com", "9999999999")
    assert said.startswith("Error: AMOUNT: must be a whole number between 1 and")


def test_a_bad_grant_note_is_said_by_its_option(world: World) -> None:
    world.user("ana@example.com")
    said = _said(
        "admin", "grant-credits", "--email", "ana@example.com", "5", "--note", "a\x1bb", code=2
    )
    assert said.startswith("Error: --note: must not contain U+001B")


def test_an_address_typed_with_decomposed_accents_finds_its_account(world: World) -> None:
    # macOS terminals and file names hand programs decomposed text: `a` + U+0308 for `ä`.
    ana = world.user("ana@exämple.com")
    typed = unicodedata.normalize("NFD", " ANA@EXÄMPLE.COM ")
    said = _said("admin", "grant-credits", "--email", typed, "7", code=0)
    assert said == "ana@exämple.com now has 7 credits."
    assert world.do(Principal.web(ana), credits.get_balance) == 7
    _said("admin", "create-token", "--email", typed, "--scopes", "read", code=0)


# Bytes that are not UTF-8 reach a command as lone surrogates (Python's surrogateescape).
NOT_UTF8 = "pass\udcff\udcfeword"


def test_a_password_of_bytes_that_are_not_utf8_is_refused_by_its_option() -> None:
    said = _said("admin", "create-user", "--email", "b@example.com", "--password", NOT_UTF8, code=2)
    assert said == "Error: --password: holds bytes that are not UTF-8 text; type it again"


def test_an_address_of_bytes_that_are_not_utf8_finds_no_account(world: World) -> None:
    world.user("ana@example.com")
    said = _said("admin", "grant-credits", "--email", "ana\udcff@example.com", "5")
    assert said.startswith("Error: No account with email ana")


def test_a_display_name_of_bytes_that_are_not_utf8_is_refused_by_its_option() -> None:
    result = runner.invoke(
        app,
        ["admin", "create-user", "--email", "b@example.com", "--password", "password123",
         "--name", "\udcff"],
    )  # fmt: skip
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    assert "--name: must not contain U+DCFF" in result.output
