"""Account mail (verification, reset and invitation links) is claimed by the request that sends
it, as owners' mail is by the delivery rounds: two senders never send one message twice."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from benchgen.core.context import Context, Principal
from benchgen.core.permissions import Action
from benchgen.jobs.worker import push_outbox
from benchgen.services.accounts import _mail_queue, mail
from benchgen.services.benchmarks import outbox
from benchgen.services.runtime import transaction
from tests.smtp_stub import SmtpStub
from tests.support import OPERATOR, World

# As the web pages send account mail after their response.
ACCOUNT_MAILER = Principal.system("account-mail", frozenset({Action.MAIL_SEND}))
ANA = "ana@example.com"


def _after_response(world: World, claimed: threading.Barrier) -> None:
    """What a web page does once its response is out, as `web.pages.accounts` does it."""
    with transaction(world.rt, ACCOUNT_MAILER) as ctx:
        letters = mail.queued_account_mail(ctx, ANA)
    claimed.wait(30)
    for letter in letters:
        error = mail.send_letter(world.rt.settings, letter)
        world.do(ACCOUNT_MAILER, mail.record_outcome, letter.id, error)


@pytest.mark.both_backends
def test_two_requests_and_the_operator_send_each_account_message_once(
    world: World, smtp_stub: SmtpStub
) -> None:
    """Both requests (a reset asked for twice) read every queued message to the address and
    sent each one, and the operator's push sent them a third time."""

    def queue(ctx: Context) -> None:
        for subject in ("Confirm your email", "Reset", "Reset again"):
            _mail_queue.record_mail(ctx, ANA, subject, "a link")

    world.ctx_call(OPERATOR, queue)
    # Every sender has looked before any sends: the race at its worst, every time.
    claimed = threading.Barrier(3)

    def operator() -> None:
        claimed.wait(30)
        push_outbox(world.rt, OPERATOR)

    runs: list[Callable[[], None]] = [lambda: _after_response(world, claimed)] * 2 + [operator]
    threads = [threading.Thread(target=run) for run in runs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert sorted(str(sent.message["Subject"]) for sent in smtp_stub.received) == [
        "Confirm your email",
        "Reset",
        "Reset again",
    ]
    assert {line.status for line in world.do(OPERATOR, outbox.list_outbox)} == {"sent"}


def test_a_message_a_request_claimed_is_left_to_it(world: World, smtp_stub: SmtpStub) -> None:
    world.ctx_call(OPERATOR, lambda ctx: _mail_queue.record_mail(ctx, ANA, "Reset", "a link"))
    [letter] = world.do(ACCOUNT_MAILER, mail.queued_account_mail, ANA)
    assert world.do(ACCOUNT_MAILER, mail.queued_account_mail, ANA) == []
    assert push_outbox(world.rt, OPERATOR).sent == 0
    world.do(ACCOUNT_MAILER, mail.record_outcome, letter.id, "")
    assert [line.status for line in world.do(OPERATOR, outbox.list_outbox)] == ["sent"]
