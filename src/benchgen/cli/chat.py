"""`benchgen chat`: talk to the agent in the terminal, on this machine (`--as`) or a server's."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any, Protocol

import typer
from pydantic import ValidationError
from rich.panel import Panel
from rich.prompt import Prompt
from rich.text import Text

from benchgen.cli.common import cli_principal, console, one_place, open_runtime, say_error
from benchgen.cli.helptext import App
from benchgen.core.context import Principal
from benchgen.core.errors import BenchGenError
from benchgen.services.runtime import Runtime, transaction

# The agent, its model libraries, the API's shapes and the HTTP client load when a chat starts,
# not with every `benchgen` command (they are most of its start-up time).
if TYPE_CHECKING:
    from benchgen.agent.runner import TurnRunner
    from benchgen.api.schemas import TurnOut
    from benchgen.client import BenchGen

HELP = (
    "Chat with the agent: it builds benchmarks, runs models and reads results for you, and asks "
    "before it changes anything.\n\n"
    "[bold]Where:[/] --as EMAIL talks to the agent on this machine's database (audited as the "
    "cli door); --url URL with --token (or BENCHGEN_TOKEN) talks to a remote server through its "
    "API, with a personal token that has the read scope. Give one or the other.\n\n"
    "[bold]How:[/] without --message, an interactive prompt: type your words and press Enter. "
    "When a reply shows numbered buttons, type a number to press that button (its action is sent "
    "exactly as the server gave it); while an Approve button is shown, [bold]a[/] or "
    "[bold]approve[/] presses it. Leave with /quit or Ctrl-D. Each reply shows its status: "
    "completed, awaiting_approval, awaiting_choice, stopped_at_cap, failed, or running (then the "
    "command polls until the turn ends).\n\n"
    "[bold]Scripts:[/] --message TEXT (repeatable) sends each message in order, prints each "
    "reply and exits; numbers and a/approve work there too. --conversation ID continues an "
    "earlier conversation (its last buttons still apply); otherwise a new one starts with the "
    "first message sent, and its id is printed.\n\n"
    "\b\nExamples:\n"
    "  $ benchgen chat --as ana@example.com\n"
    "  $ benchgen chat --url https://bench.example -m 'Make a quiz on capitals'\n"
    "  $ benchgen chat --conversation conv_… -m approve --as ana@example.com"
)
QUIT = frozenset({"/quit", "/exit"})
APPROVE_WORDS = frozenset({"a", "approve"})
STYLES = {
    "completed": "green",
    "awaiting_approval": "yellow",
    "awaiting_choice": "cyan",
    "stopped_at_cap": "yellow",
}
Turn = dict[str, Any]
Buttons = list[dict[str, Any]]


class Door(Protocol):
    """Where messages go: this machine's services, or a server's API."""

    def open(self, conversation_id: str | None) -> tuple[str, Turn | None]:
        """The conversation to talk in (a new one unless given) and its last turn."""

    def send(self, conversation_id: str, body: dict[str, Any]) -> Turn:
        """Send `{"text"}` or `{"action"}`; the turn as the API shapes it."""

    def turn(self, conversation_id: str, turn_id: str) -> Turn:
        """One turn as it stands."""


class LocalDoor:
    """The agent on this machine, acting as a user through the cli door."""

    def __init__(self, runtime: Runtime, principal: Principal, runner: TurnRunner) -> None:
        self.runtime, self.principal, self.runner = runtime, principal, runner

    def open(self, conversation_id: str | None) -> tuple[str, Turn | None]:
        from benchgen.api.schemas import TurnOut
        from benchgen.services.chat import conversations

        with transaction(self.runtime, self.principal) as ctx:
            if conversation_id is None:
                return conversations.create_conversation(ctx).id, None
            _, turns = conversations.get_conversation(ctx, conversation_id, limit=1)
        return conversation_id, _shaped(TurnOut.model_validate(turns[-1])) if turns else None

    def send(self, conversation_id: str, body: dict[str, Any]) -> Turn:
        from benchgen.agent.messages import MessageIn
        from benchgen.api.schemas import TurnOut

        message = MessageIn.model_validate(body)
        wait_s = self.runtime.settings.agent_wait_s
        return _shaped(
            TurnOut.model_validate(
                self.runner.send(self.principal, conversation_id, message, wait_s)
            )
        )

    def turn(self, conversation_id: str, turn_id: str) -> Turn:
        from benchgen.api.schemas import TurnOut
        from benchgen.services.chat import conversations

        with transaction(self.runtime, self.principal, write=False) as ctx:
            return _shaped(
                TurnOut.model_validate(conversations.get_turn(ctx, conversation_id, turn_id))
            )


class RemoteDoor:
    """A server's agent, through the HTTP API and a personal token."""

    def __init__(self, client: BenchGen) -> None:
        self.client = client

    def open(self, conversation_id: str | None) -> tuple[str, Turn | None]:
        if conversation_id is None:
            return self.client.create_conversation()["id"], None
        turns = self.client.get_conversation(conversation_id, limit=1)["turns"]
        return conversation_id, dict(turns[-1]) if turns else None

    def send(self, conversation_id: str, body: dict[str, Any]) -> Turn:
        turn = self.client.send_message(conversation_id, body.get("text"), body.get("action"))
        return dict(turn)

    def turn(self, conversation_id: str, turn_id: str) -> Turn:
        return dict(self.client.get_turn(conversation_id, turn_id))


def _shaped(turn: TurnOut) -> Turn:
    return turn.model_dump(mode="json")


def chat_command(
    as_email: Annotated[
        str | None,
        typer.Option("--as", metavar="EMAIL", help="Chat as this user on this machine (cli door)."),
    ] = None,
    url: Annotated[
        str | None, typer.Option(metavar="URL", help="A remote server, e.g. https://bench.example")
    ] = None,
    token: Annotated[
        str | None,
        typer.Option(
            envvar="BENCHGEN_TOKEN", metavar="TOKEN", help="Personal API token for --url."
        ),
    ] = None,
    conversation: Annotated[
        str | None, typer.Option(metavar="ID", help="Continue this conversation (conv_…).")
    ] = None,
    message: Annotated[
        list[str] | None,
        typer.Option("--message", "-m", metavar="TEXT", help="Send this and exit (repeatable)."),
    ] = None,
) -> None:
    """Chat with the agent (the command's help is HELP)."""
    one_place(as_email, url)
    _check_messages(message or [])
    door_of = _local(as_email) if as_email is not None else _remote(url or "", token)
    with door_of as door:
        _converse(door, conversation, message or [])


def _check_messages(messages: list[str]) -> None:
    """Refuse a blank or overlong --message before a conversation is opened: it would be left
    behind, empty (and here an overlong one ended in a traceback)."""
    from benchgen.agent.messages import MAX_TEXT

    if any(not text.strip() for text in messages):
        raise typer.BadParameter("a message must hold some words", param_hint="--message")
    if any(len(text) > MAX_TEXT for text in messages):
        raise typer.BadParameter(
            f"a message holds at most {MAX_TEXT:,} characters", param_hint="--message"
        )


@contextmanager
def _local(email: str) -> Iterator[Door]:
    from benchgen.agent.brains import BrainUnavailable, configured_brain
    from benchgen.agent.runner import TurnRunner

    with open_runtime() as runtime:
        principal = cli_principal(runtime, email)
        try:
            brain = configured_brain(runtime.settings)
        except BrainUnavailable as exc:
            say_error(str(exc))
            raise typer.Exit(1) from None
        runner = TurnRunner(runtime, brain, 1)
        try:
            yield LocalDoor(runtime, principal, runner)
        finally:
            runner.close()  # a turn left running is still recorded before the database closes


@contextmanager
def _remote(url: str, token: str | None) -> Iterator[Door]:
    from benchgen.client import BenchGen, ClientError

    try:
        client = BenchGen(url, token)
    except ValueError as exc:
        say_error(str(exc))
        raise typer.Exit(2) from None
    with client:
        try:
            yield RemoteDoor(client)
        except ClientError as exc:
            say_error(exc.message)
            raise typer.Exit(1) from None


def _converse(door: Door, conversation_id: str | None, messages: list[str]) -> None:
    if messages:
        conv, buttons = _open(door, conversation_id)
        for line in messages:
            buttons = _show(door, conv, door.send(conv, interpret(line, buttons)))
        return
    # A new conversation is made with the first message: `echo -n | benchgen chat` (or Ctrl-D
    # at once) left an empty one behind in the user's list.
    opened = _open(door, conversation_id) if conversation_id is not None else None
    console.print("Type a message; a number presses a button; /quit or Ctrl-D leaves.")
    sent = False
    while True:
        try:
            line = Prompt.ask(Text("you", style="bold"), console=console.rich).strip()
        except (EOFError, KeyboardInterrupt):
            console.print()
            break
        if line in QUIT:
            break
        if line:
            conv, buttons = opened or _open(door, None)
            opened, sent = (conv, _exchange(door, conv, line, buttons)), True
    if not sent:
        console.print("Nothing was sent" + ("." if opened else "; no conversation was made."))


def _open(door: Door, conversation_id: str | None) -> tuple[str, Buttons]:
    """The conversation to talk in, named, and the buttons its last turn left."""
    conv, last = door.open(conversation_id)
    console.print(Text(f"Conversation {conv}", style="bold"))
    return conv, _show(door, conv, last) if last is not None else []


def _exchange(door: Door, conv: str, line: str, buttons: Buttons) -> Buttons:
    """One message of the interactive loop: refusals are shown, and the loop goes on."""
    from benchgen.client import ClientError

    try:
        return _show(door, conv, door.send(conv, interpret(line, buttons)))
    except (BenchGenError, ClientError) as exc:
        say_error(exc.message)
    except ValidationError as exc:
        say_error(f"{exc.errors()[0]['msg']}")
    return buttons


def interpret(line: str, buttons: Buttons) -> dict[str, Any]:
    """What a typed line sends: a shown button's number presses it, `a`/`approve` presses the
    Approve button when one is shown, anything else is words for the agent."""
    word = line.strip()
    if word.isdigit() and 1 <= int(word) <= len(buttons):
        return {"action": buttons[int(word) - 1]["action"]}
    if word.casefold() in APPROVE_WORDS:
        for button in buttons:
            if button["action"].get("type") == "approve":
                return {"action": button["action"]}
    return {"text": word}


def _working(turn: Turn, printable: Callable[[str], str]) -> Text:
    """What a running turn says it is doing (waiting for a free agent thread, say), as text."""
    return Text(printable(turn["reply"]) if turn["reply"] else "The agent is still working…")


def _show(door: Door, conv: str, turn: Turn) -> Buttons:
    """Print a turn once it is no longer running; its buttons are the next choices."""
    from benchgen.agent.replies import printable

    if turn["status"] == "running":
        with console.status(_working(turn, printable)) as shown:
            while turn["status"] == "running":
                time.sleep(1)
                turn = door.turn(conv, turn["turn_id"])
                shown.update(_working(turn, printable))

    status = printable(turn["status"])
    # Replies are plain Text: words from the agent or the user are never read as Rich markup,
    # and their escape sequences never reach the terminal (`printable` shows them by code).
    body = Text(printable(turn["reply"] or "(no reply)"))
    title = Text(f"agent · {status}", style=STYLES.get(status, "red"))
    # Wrapped, not cropped: the shared console soft-wraps, which a panel would cut off. Off a
    # terminal the console has no width to fill: the panel fits the reply.
    panel = Panel(body, title=title, title_align="left", expand=console.is_terminal)
    console.print(panel, soft_wrap=False)
    for notice in turn.get("notices", []):
        console.print(Text(f"Note: {printable(notice)}", style="yellow"))
    buttons: Buttons = list(turn.get("buttons", []))
    for number, button in enumerate(buttons, start=1):
        console.print(Text(f"  {number}. {printable(button['label'])}", style="bold"))
    if any(button["action"].get("type") == "approve" for button in buttons):
        console.print(Text("  (a or approve presses Approve)", style="dim"))
    return buttons


commands = App()
commands.command("chat", help=HELP)(chat_command)
