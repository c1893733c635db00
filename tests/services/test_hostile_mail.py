"""Mail against hostile text: headers say exactly the recipient and subject given (no encoded
word or line break starts a header of someone's choosing), a message that cannot be written
is given up on without stopping the rest, non-ASCII addresses go out where the server can take
them, and auto-responders are told not to answer."""

from __future__ import annotations

import base64

import pytest

from benchgen.core.context import Context, Principal
from benchgen.core.errors import InvalidInput
from benchgen.jobs.worker import Mailer
from benchgen.services.accounts import _mail_queue
from benchgen.services.benchmarks import members, outbox
from tests.smtp_stub import SmtpStub
from tests.support import MCQ, OPERATOR, World

VICTIM = "victim@example.org"


def _encoded(text: str) -> str:
    return f"=?utf-8?b?{base64.b64encode(text.encode()).decode()}?="


@pytest.fixture
def owner_and_bm(world: World) -> tuple[str, str]:
    """A benchmark whose one active participant is bob@ (verified)."""
    owner = world.user("owner@example.com")
    bm = world.benchmark(owner, MCQ)
    world.do(Principal.web(owner), members.add_whitelist_entries, bm, ["bob@example.com"])
    world.do(Principal.web(world.user("bob@example.com")), members.join_benchmark, bm, True)
    return owner, bm


def _queue(world: World, bm: str, *letters: tuple[str, str]) -> None:
    """Owners' mail (the rounds send it at once) to each (address, subject)."""

    def record(ctx: Context) -> None:
        for to, subject in letters:
            _mail_queue.record_mail(ctx, to, subject, "Body", benchmark_id=bm)

    world.ctx_call(OPERATOR, record)


def _statuses(world: World) -> dict[str, tuple[str, str]]:
    listed = world.do(OPERATOR, outbox.list_outbox)
    return {line.to_email: (line.status, line.error) for line in listed}


def test_an_owners_subject_holding_an_encoded_word_is_refused(
    world: World, owner_and_bm: tuple[str, str]
) -> None:
    """The subject passed every check as text, then the mail library decoded it: the line
    break inside started a `Bcc:` header, and the owner's text went to any address at all."""
    owner, bm = owner_and_bm
    hostile = _encoded(f"Round two\r\nBcc: {VICTIM}")
    with pytest.raises(InvalidInput, match="encoded words"):
        world.do(Principal.web(owner), outbox.send_participant_email, bm, hostile, "Pay here")
    assert world.do(OPERATOR, outbox.list_outbox) == []


@pytest.mark.parametrize(
    ("to", "subject"),
    [
        ("eve@example.com", _encoded(f"Hi\r\nBcc: {VICTIM}")),  # queued before the form refused
        ("eve@example.com", "Hi\u2028there"),  # a line break only Unicode calls one
        # Valid to the sign-up form's check: '=', '?' and base64 are letters of an address.
        (_encoded(f"x\r\nBcc: {VICTIM}") + "@evil.test", "Confirm your email"),
        (_encoded(VICTIM) + "@evil.test", "Confirm your email"),
    ],
)
def test_a_header_that_would_not_read_as_given_is_never_sent_and_holds_nothing_back(
    world: World, owner_and_bm: tuple[str, str], smtp_stub: SmtpStub, to: str, subject: str
) -> None:
    """Sent, it mailed the victim; or the mail library raised, the round ended with the
    message claimed, and every ten minutes for two days it was claimed and raised again."""
    _, bm = owner_and_bm
    _queue(world, bm, (to, subject), ("bob@example.com", "Round two"))
    assert Mailer(world.rt).run_once() is False
    assert [sent.recipients for sent in smtp_stub.received] == [["bob@example.com"]]
    status, error = _statuses(world)[to]
    assert status == "bounced" and error.startswith("Unsendable: ")
    assert VICTIM not in error and "evil" not in error


def test_non_ascii_addresses_go_where_the_server_takes_them_and_stop_no_round(
    world: World,
    owner_and_bm: tuple[str, str],
    smtp_stub: SmtpStub,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A server without SMTPUTF8 refused every non-ASCII address as a failure of the server:
    the round stopped there, and all mail waited five minutes, again and again for two days."""
    _, bm = owner_and_bm
    _queue(
        world, bm, ("josé@example.com", "Hi"), ("ana@bücher.de", "Hi"), ("bob@example.com", "Hi")
    )
    assert Mailer(world.rt).run_once() is False
    # A domain has an ASCII form that every server takes; a name does not.
    assert sorted(to for sent in smtp_stub.received for to in sent.recipients) == [
        "ana@xn--bcher-kva.de",
        "bob@example.com",
    ]
    assert _statuses(world)["josé@example.com"] == (
        "bounced",
        "Unsendable: the mail server takes no non-ASCII address (no SMTPUTF8)",
    )
    modern = SmtpStub(utf8=True)
    try:
        monkeypatch.setattr(world.rt.settings, "smtp_url", modern.url)
        _queue(world, bm, ("zoë@example.com", "Hi"))
        assert Mailer(world.rt).run_once() is False
        assert [sent.recipients for sent in modern.received] == [["zoë@example.com"]]
    finally:
        modern.close()


def test_mail_says_it_is_automatic_so_no_auto_responder_answers_it(
    world: World, owner_and_bm: tuple[str, str], smtp_stub: SmtpStub
) -> None:
    """Without `Auto-Submitted`, an out-of-office reply (or a sender address that answers
    mail) could answer every message, and an answer to an answer is a loop."""
    owner, bm = owner_and_bm
    subject = "Résultats de la deuxième manche " * 9  # 297 characters, folded over lines
    world.do(Principal.web(owner), outbox.send_participant_email, bm, subject, "It starts Monday.")
    assert Mailer(world.rt).run_once() is False
    [sent] = smtp_stub.received
    assert sent.message["Auto-Submitted"] == "auto-generated"
    assert sent.message["Subject"] == subject.strip()
    assert sent.message.get_all("Bcc") is None and sent.message["To"] == "bob@example.com"
