"""`benchgen chat`: scripted messages here (`--as`) and through the API (`--url`), typed input."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from benchgen.agent import brains
from benchgen.agent.brains import Brain
from benchgen.app import create_app
from benchgen.cli import app
from benchgen.cli import chat as chat_cli
from benchgen.core.context import Principal
from benchgen.services.benchmarks import lifecycle
from benchgen.services.chat import conversations
from benchgen.services.runtime import Runtime
from tests.agent.scripted import Script
from tests.client.relay import served_to_the_cli
from tests.support import World

runner = CliRunner()
SUMS = {"title": "Sums", "format": "qa", "questions": [{"prompt": "2+2?", "answer": "4"}]}
APPROVE = {"type": "approve", "proposal_id": "prop_1", "preview_hash": "h" * 64}
BUTTONS = [
    {"label": "Approve", "action": APPROVE},
    {"label": "Decline", "action": {"type": "decline", "proposal_id": "prop_1"}},
]


pytestmark = pytest.mark.usefixtures("cli_env")


def _proposing(monkeypatch: pytest.MonkeyPatch) -> Brain:
    """The local chat's brain: it proposes the Sums benchmark, then only talks."""
    brain = Script([[("propose_create_benchmark", SUMS)], "Anything else?"]).brain()
    # The command imports the brain factory when a chat starts (cli/chat.py): patch it there.
    monkeypatch.setattr(brains, "configured_brain", lambda settings: brain)
    return brain


def _titles(world: World, user_id: str) -> list[str]:
    listed = world.do(Principal.web(user_id), lifecycle.list_benchmarks, True)
    return [benchmark.title for benchmark in listed]


def test_help_explains_doors_buttons_and_scripts() -> None:
    result = runner.invoke(app, ["chat", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    for needed in ("--as", "--url", "BENCHGEN_TOKEN", "--message", "--conversation", "approve"):
        assert needed in result.output
    assert "running" in result.output and "/quit" in result.output


def test_typed_lines_press_buttons_or_say_words() -> None:
    assert chat_cli.interpret("1", BUTTONS) == {"action": APPROVE}
    assert chat_cli.interpret(" 2 ", BUTTONS) == {"action": BUTTONS[1]["action"]}
    assert chat_cli.interpret("Approve", BUTTONS) == {"action": APPROVE}
    assert chat_cli.interpret("a", BUTTONS[1:]) == {"text": "a"}  # no Approve shown
    assert chat_cli.interpret("3", BUTTONS) == {"text": "3"}
    assert chat_cli.interpret("make a quiz", BUTTONS) == {"text": "make a quiz"}


def test_local_messages_propose_then_approve(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    _proposing(monkeypatch)
    ana = world.user("ana@example.com")
    result = runner.invoke(
        app,
        ["chat", "--as", "ana@example.com", "-m", "make a sums benchmark", "-m", "a"],
        env={"COLUMNS": "200"},
    )
    assert result.exit_code == 0, result.output
    assert "awaiting_approval" in result.output and "1. Approve" in result.output
    assert "Created benchmark bm_" in result.output and "completed" in result.output
    assert _titles(world, ana) == ["Sums"]
    conversation = result.output.split("Conversation ", 1)[1].split()[0]
    again = runner.invoke(
        app, ["chat", "--as", "ana@example.com", "--conversation", conversation, "-m", "thanks"]
    )
    assert again.exit_code == 0, again.output
    assert "Anything else?" in again.output


def test_either_here_or_remote_and_clear_errors(world: World) -> None:
    neither = runner.invoke(app, ["chat", "-m", "hi"])
    assert neither.exit_code == 2 and "--as" in neither.output
    no_token = runner.invoke(app, ["chat", "--url", "http://127.0.0.1:9", "-m", "hi"])
    assert no_token.exit_code == 2 and "BENCHGEN_TOKEN" in no_token.output
    unknown = runner.invoke(app, ["chat", "--as", "nobody@example.com", "-m", "hi"])
    assert unknown.exit_code == 1 and "nobody@example.com" in unknown.output
    # A blank message was a traceback, after opening a conversation it left empty.
    ana = world.user("ana@example.com")
    blank = runner.invoke(app, ["chat", "--as", "ana@example.com", "-m", "  "])
    assert blank.exit_code == 2 and "must hold some words" in blank.output
    # An overlong one was a traceback here (a refusal from a server), after the same.
    overlong = runner.invoke(app, ["chat", "--as", "ana@example.com", "-m", "x" * 100_001])
    assert overlong.exit_code == 2 and "at most 100,000 characters" in overlong.output
    assert world.do(Principal.web(ana), conversations.list_conversations) == []


def test_remote_messages_go_through_the_api(
    world: World, runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    ana = world.user("ana@example.com")
    secret = world.token(ana, ["read", "create"])
    brain = Script([[("propose_create_benchmark", SUMS)]]).brain()
    with served_to_the_cli(
        create_app(runtime.settings, runtime, brain=brain), monkeypatch, secret
    ) as there:
        result = runner.invoke(
            app,
            ["chat", "--url", "http://testserver", "-m", "make sums", "-m", "1"],
            env={"BENCHGEN_TOKEN": secret, "COLUMNS": "200"},
        )
        assert result.exit_code == 0, result.output
        assert "Created benchmark bm_" in result.output
        assert _titles(world, ana) == ["Sums"]
        missing = ["--conversation", "conv_nowhere", "-m", "hi"]
        refused = runner.invoke(app, ["chat", *there, *missing])
        assert refused.exit_code == 1 and "No such conversation" in refused.output


def test_interactive_prompt_presses_buttons_by_number(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    _proposing(monkeypatch)
    ana = world.user("ana@example.com")
    typed = "make a sums benchmark\n\n1\nthanks\n/quit\n"
    result = runner.invoke(app, ["chat", "--as", "ana@example.com"], input=typed)
    assert result.exit_code == 0, result.output
    assert "Created benchmark bm_" in result.output and "Anything else?" in result.output
    assert _titles(world, ana) == ["Sums"]


def test_the_default_offline_brain_creates_after_approval(world: World) -> None:
    ana = world.user("ana@example.com")
    ask = 'Create a benchmark called "Sums"\nQ: 2+2?\nA: 4\nQ: 3+3?\nA: 6'
    result = runner.invoke(app, ["chat", "--as", "ana@example.com", "-m", ask, "-m", "approve"])
    assert result.exit_code == 0, result.output
    assert "awaiting_approval" in result.output and "Created benchmark bm_" in result.output
    assert _titles(world, ana) == ["Sums"]


def test_a_running_turn_shows_what_it_says_it_is_doing() -> None:
    """A turn waiting for a free agent thread said so in its reply; the spinner said only
    "The agent is still working…"."""
    from benchgen.agent.replies import printable
    from benchgen.cli.chat import _working

    waiting = {"status": "running", "reply": "Waiting for a free agent thread.\x1b[2J"}
    assert _working(waiting, printable).plain.startswith("Waiting for a free agent thread.")  # type: ignore[arg-type]
    assert "\x1b" not in _working(waiting, printable).plain  # type: ignore[arg-type]
    working = {"status": "running", "reply": ""}
    assert _working(working, printable).plain == "The agent is still working…"  # type: ignore[arg-type]
