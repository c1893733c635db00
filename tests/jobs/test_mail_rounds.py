"""Owners' mail to participants goes out by itself once a worker runs (a local SMTP stub takes
it): claimed before it is sent, so two senders never send one message twice; a failure is
retried later, a bounce never; without SMTP nothing moves."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator

import pytest

from benchgen.core.clock import ManualClock
from benchgen.core.context import Context, Principal
from benchgen.jobs.worker import MAILER, Mailer, push_outbox, start_workers, stop_workers
from benchgen.services.accounts import _mail_queue
from benchgen.services.benchmarks import members, outbox, outbox_delivery
from tests.smtp_stub import SmtpStub
from tests.support import MCQ, World

OPERATOR = Principal.cli()


@pytest.fixture
def stub() -> Iterator[SmtpStub]:
    server = SmtpStub()
    yield server
    server.close()


@pytest.fixture
def owner_and_bm(world: World) -> tuple[str, str]:
    """A benchmark whose active participants are bob@ and dan@ (both verified)."""
    owner = world.user("owner@example.com")
    bm = world.benchmark(owner, MCQ)
    world.do(Principal.web(owner), members.add_whitelist_entries, bm, ["@example.com"])
    for email in ("bob@example.com", "dan@example.com"):
        world.do(Principal.web(world.user(email)), members.join_benchmark, bm, True)
    return owner, bm


def _send(world: World, owner: str, bm: str, subject: str = "Round two") -> None:
    world.do(Principal.web(owner), outbox.send_participant_email, bm, subject, "It starts Monday.")


def _sent_list(world: World, owner: str, bm: str) -> dict[str, str]:
    listed = world.do(Principal.web(owner), outbox.list_sent, bm)
    return {message.to_email: message.status for message in listed}


def _wait_for(check: object, seconds: float = 30) -> None:
    """Poll `check()` until true (real threads deliver); fails the test after `seconds`."""
    deadline = time.monotonic() + seconds
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, "mail was not delivered"
        time.sleep(0.05)


@pytest.mark.both_backends
def test_an_owners_message_arrives_once_a_worker_runs(
    world: World, owner_and_bm: tuple[str, str], stub: SmtpStub, monkeypatch: pytest.MonkeyPatch
) -> None:
    owner, bm = owner_and_bm
    monkeypatch.setattr(world.rt.settings, "smtp_url", stub.url)
    _send(world, owner, bm)
    # Nothing is sent in the owner's request: it is queued for the workers.
    assert stub.sent() == []
    assert _sent_list(world, owner, bm) == {
        "bob@example.com": "queued",
        "dan@example.com": "queued",
    }
    started = start_workers(world.rt, 1)  # what `benchgen serve` and `benchgen worker` start
    try:
        _wait_for(lambda: len(stub.sent()) == 2)
        _wait_for(lambda: set(_sent_list(world, owner, bm).values()) == {"sent"})
    finally:
        stop_workers(started)
    assert sorted(stub.sent()) == [
        ("bob@example.com", "Round two"),
        ("dan@example.com", "Round two"),
    ]


def test_without_smtp_no_mail_thread_starts_and_nothing_moves(
    world: World, owner_and_bm: tuple[str, str]
) -> None:
    owner, bm = owner_and_bm
    assert world.rt.settings.smtp_url is None
    _send(world, owner, bm)
    started = start_workers(world.rt, 1)
    try:
        assert not any(isinstance(runner, Mailer) for runner, _ in started)
    finally:
        stop_workers(started)
    assert Mailer(world.rt).run_once() is False
    assert set(_sent_list(world, owner, bm).values()) == {"queued"}


@pytest.mark.both_backends
def test_a_failure_is_retried_later_and_a_bounce_never(
    world: World,
    owner_and_bm: tuple[str, str],
    stub: SmtpStub,
    clock: ManualClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    owner, bm = owner_and_bm
    monkeypatch.setattr(world.rt.settings, "smtp_url", stub.url)
    stub.replies = {"bob@example.com": b"451 try later", "dan@example.com": b"550 no such user"}
    _send(world, owner, bm)
    mailer = Mailer(world.rt)
    assert mailer.run_once() is False  # the recipient's failures, not the server's: it goes on
    assert _sent_list(world, owner, bm) == {
        "bob@example.com": "failed",
        "dan@example.com": "bounced",
    }
    # Not again at once: a failed message waits RETRY_EVERY after its last try.
    mailer.run_once()
    assert stub.recipients_asked == {"bob@example.com": 1, "dan@example.com": 1}
    stub.replies = {}
    clock.advance(seconds=outbox_delivery.RETRY_EVERY.total_seconds() + 1)
    mailer.run_once()
    assert stub.sent() == [("bob@example.com", "Round two")]
    assert _sent_list(world, owner, bm) == {"bob@example.com": "sent", "dan@example.com": "bounced"}
    # The bounce is never offered to the server again.
    clock.advance(hours=1)
    mailer.run_once()
    assert stub.recipients_asked == {"bob@example.com": 2, "dan@example.com": 1}


def test_a_server_that_is_down_ends_the_round_and_its_mail_goes_later(
    world: World,
    owner_and_bm: tuple[str, str],
    stub: SmtpStub,
    clock: ManualClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    owner, bm = owner_and_bm
    url = stub.url
    stub.close()  # nothing listens on its port now
    monkeypatch.setattr(world.rt.settings, "smtp_url", url)
    _send(world, owner, bm)
    # One try reaches the dead server; the other message is not made to wait out the same
    # timeout in this round.
    assert Mailer(world.rt).run_once() is True
    statuses = sorted(_sent_list(world, owner, bm).values())
    assert statuses == ["failed", "queued"]
    back = SmtpStub()
    try:
        monkeypatch.setattr(world.rt.settings, "smtp_url", back.url)
        clock.advance(seconds=outbox_delivery.RETRY_EVERY.total_seconds() + 1)
        assert Mailer(world.rt).run_once() is False
        assert sorted(to for to, _ in back.sent()) == ["bob@example.com", "dan@example.com"]
    finally:
        back.close()
    assert set(_sent_list(world, owner, bm).values()) == {"sent"}


@pytest.mark.both_backends
def test_senders_racing_for_the_same_mail_send_each_message_once(
    world: World, owner_and_bm: tuple[str, str], stub: SmtpStub, monkeypatch: pytest.MonkeyPatch
) -> None:
    owner, bm = owner_and_bm
    monkeypatch.setattr(world.rt.settings, "smtp_url", stub.url)
    addresses = [f"p{index}@example.com" for index in range(30)]

    def queue(ctx: Context) -> None:
        for address in addresses:
            _mail_queue.record_mail(ctx, address, "News", "Body", batch_id="b1", benchmark_id=bm)

    world.ctx_call(Principal.web(owner), queue)
    mailers = [Mailer(world.rt) for _ in range(3)]
    errors: list[BaseException] = []

    def deliver(send: object) -> None:
        # A busy SQLite database answers Unavailable to a claim; the round then tries again.
        for _ in range(50):
            try:
                send()  # type: ignore[operator]
            except Exception as exc:
                errors.append(exc)
                continue
            return

    threads = [threading.Thread(target=deliver, args=(m.run_once,)) for m in mailers]
    threads.append(
        threading.Thread(target=deliver, args=(lambda: push_outbox(world.rt, OPERATOR),))
    )
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    Mailer(world.rt).run_once()  # whatever a busy database made a round give up on
    assert Counter(to for to, _ in stub.sent()) == Counter(addresses)
    listed = world.do(OPERATOR, outbox.list_outbox)
    assert {line.status for line in listed} == {"sent"}
    assert all("Unavailable" in type(error).__name__ for error in errors), errors


@pytest.mark.both_backends
def test_a_claim_left_by_a_dead_sender_is_taken_again_and_its_late_record_is_ignored(
    world: World,
    owner_and_bm: tuple[str, str],
    stub: SmtpStub,
    clock: ManualClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    owner, bm = owner_and_bm
    monkeypatch.setattr(world.rt.settings, "smtp_url", stub.url)
    _send(world, owner, bm)
    first = world.do(MAILER, outbox_delivery.claim_waiting_mail)
    second = world.do(MAILER, outbox_delivery.claim_waiting_mail)
    assert first is not None and second is not None
    assert first.letter.id != second.letter.id  # a claimed message is nobody else's
    assert world.do(MAILER, outbox_delivery.claim_waiting_mail) is None
    world.do(
        MAILER,
        outbox_delivery.record_sending,
        second,
        outbox_delivery.send_claimed(world.rt.settings, second),
    )
    # The first sender died holding its claim: nobody takes it until the claim times out.
    clock.advance(seconds=outbox_delivery.CLAIM_TIMEOUT.total_seconds() - 1)
    assert Mailer(world.rt).run_once() is False
    assert len(stub.sent()) == 1
    clock.advance(seconds=2)
    assert Mailer(world.rt).run_once() is False
    assert sorted(to for to, _ in stub.sent()) == ["bob@example.com", "dan@example.com"]
    # The dead sender's record, should it come back, changes nothing: the message is sent.
    world.do(
        MAILER, outbox_delivery.record_sending, first, outbox_delivery.Outcome("failed", "late")
    )
    assert set(_sent_list(world, owner, bm).values()) == {"sent"}


def test_account_mail_is_left_to_its_own_sender_and_only_failures_are_retried(
    world: World, stub: SmtpStub, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(world.rt.settings, "smtp_url", stub.url)

    def queue(ctx: Context) -> None:
        _mail_queue.record_mail(ctx, "reset@example.com", "Reset", "link")

    world.ctx_call(OPERATOR, queue)
    # The request that queued it sends it right after its response: a round racing it would
    # send it twice.
    assert Mailer(world.rt).run_once() is False
    assert stub.sent() == []
    # A sender that died before sending it leaves it queued: the rounds take it after a while.
    clock.advance(seconds=outbox_delivery.CLAIM_TIMEOUT.total_seconds() + 1)
    Mailer(world.rt).run_once()
    assert stub.sent() == [("reset@example.com", "Reset")]


def test_old_mail_queued_before_smtp_was_set_up_is_left_to_the_operator(
    world: World,
    owner_and_bm: tuple[str, str],
    stub: SmtpStub,
    clock: ManualClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    owner, bm = owner_and_bm
    _send(world, owner, bm)
    clock.advance(days=3)
    monkeypatch.setattr(world.rt.settings, "smtp_url", stub.url)
    assert Mailer(world.rt).run_once() is False
    assert stub.sent() == []
    assert push_outbox(world.rt, OPERATOR) == outbox_delivery.Delivered(2, 0)
    assert len(stub.sent()) == 2


def test_the_round_waits_out_its_pause_and_stops_when_asked(world: World) -> None:
    mailer = Mailer(world.rt, every_s=0.01)
    thread = threading.Thread(target=mailer.run_forever)
    thread.start()
    mailer.stop()
    thread.join(10)
    assert not thread.is_alive()
