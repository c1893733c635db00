"""`benchgen admin outbox --deliver` sends in the mail thread's rounds: no transaction is open
while SMTP talks, and each message's outcome is recorded as soon as it is known."""

from __future__ import annotations

import base64
import threading
from collections.abc import Iterator

import pytest
from click.testing import Result
from typer.testing import CliRunner

from benchgen.cli import app
from benchgen.core.context import Context
from benchgen.services.accounts import _mail_queue
from benchgen.services.benchmarks import outbox
from tests.smtp_stub import SmtpStub
from tests.support import OPERATOR, World

pytestmark = pytest.mark.usefixtures("cli_env")
runner = CliRunner()
# Valid to the sign-up form's address check; read by the mail library as an address whose
# name holds a line break.
HOSTILE = "=?utf-8?b?" + base64.b64encode(b"x\r\nBcc: victim@example.org").decode() + "?=@evil.test"


@pytest.fixture
def stub(monkeypatch: pytest.MonkeyPatch) -> Iterator[SmtpStub]:
    server = SmtpStub()
    monkeypatch.setenv("BENCHGEN_SMTP_URL", server.url)
    yield server
    server.close()


def _queue(world: World, *addresses: str) -> None:
    def record(ctx: Context) -> None:
        for address in addresses:
            _mail_queue.record_mail(ctx, address, "Hi", "Body")

    world.ctx_call(OPERATOR, record)


def test_other_writes_go_through_while_a_slow_server_takes_a_message(
    world: World, stub: SmtpStub
) -> None:
    """The push sent inside one transaction: on SQLite every other writer (each request of
    the server) waited as long as the mail server took."""
    _queue(world, "ana@example.com")
    stub.open.clear()  # the server sits on the message until told
    pushed: list[Result] = []
    push = threading.Thread(
        target=lambda: pushed.append(runner.invoke(app, ["admin", "outbox", "--deliver"]))
    )
    push.start()
    wrote = threading.Event()
    writer = threading.Thread(target=lambda: (world.user("bob@example.com"), wrote.set()))
    try:
        assert stub.in_data.wait(30), "the push never reached the server"
        writer.start()
        went_through = wrote.wait(10)
    finally:
        stub.open.set()
        push.join(30)
    writer.join(30)
    assert went_through, "a write waited for the mail server"
    assert pushed[0].exit_code == 0, pushed[0].output
    assert [sent.recipients for sent in stub.received] == [["ana@example.com"]]


def test_a_message_that_cannot_be_written_neither_stops_the_push_nor_undoes_what_it_sent(
    world: World, stub: SmtpStub
) -> None:
    """The push raised on such a message and rolled its one transaction back: what it had
    sent was recorded as still waiting, and sent again by the next push."""
    _queue(world, "ana@example.com", HOSTILE, "dan@example.com")
    result = runner.invoke(app, ["admin", "outbox", "--deliver"], env={"COLUMNS": "200"})
    assert result.exit_code == 1  # something bounced: the operator looks
    assert "Sent 2 message(s); 1 bounced" in " ".join(result.output.split())
    assert sorted(to for sent in stub.received for to in sent.recipients) == [
        "ana@example.com",
        "dan@example.com",
    ]
    listed = world.do(OPERATOR, outbox.list_outbox)
    assert {(line.to_email, line.status) for line in listed} == {
        ("ana@example.com", "sent"),
        ("dan@example.com", "sent"),
        (HOSTILE, "bounced"),
    }
    again = runner.invoke(app, ["admin", "outbox", "--deliver"])
    assert again.exit_code == 0 and len(stub.received) == 2
