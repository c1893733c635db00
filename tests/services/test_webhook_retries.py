"""A run's webhook whose receiver was away (no reply, a 5xx, 429) is sent again later, a few
times, with a fresh signature each time; a final refusal is never sent again, and a claim left by
a worker that died mid-send is taken over."""

from __future__ import annotations

import hashlib
import hmac
import socket
import threading
import time

from sqlalchemy import select, update

from benchgen.core.clock import ManualClock
from benchgen.core.context import Context, Principal
from benchgen.db.tables import RunNotification
from benchgen.jobs.webhooks import WebhookRounds
from benchgen.jobs.worker import start_workers, stop_workers
from benchgen.services.runs import notifications
from benchgen.services.runtime import Runtime
from tests.services.test_notifications import (
    WORKER,
    Receiver,
    _claims,
    _finished_run,
    _log,
    open_local,
    receivers,
)
from tests.support import World

__all__ = ["open_local", "receivers"]  # fixtures, used by name


def _hooked(world: World, receiver: Receiver) -> tuple[str, str]:
    """A user whose runs' ends go to `receiver`: their id and the webhook's secret."""
    ana = world.user("ana@example.com")
    saved = world.do(
        Principal.web(ana), notifications.update_notification_settings, False, receiver.url
    )
    assert saved.webhook_secret is not None
    return ana, saved.webhook_secret


def _hooked_run(
    world: World, runtime: Runtime, hook: Receiver, status: int = 204
) -> tuple[str, str]:
    """A finished run of a user whose webhook is `hook`, answering `status`: the user's id and
    the run's."""
    hook.status = status
    ana, _ = _hooked(world, hook)
    return ana, _finished_run(world, runtime, ana)


def _round(runtime: Runtime) -> int:
    return WebhookRounds(runtime).run_once()


def _nothing_more_sent(runtime: Runtime, clock: ManualClock, hook: Receiver, **wait: float) -> None:
    """After `wait`, a round sends nothing: `hook` still has its first request only."""
    clock.advance(**wait)
    assert _round(runtime) == 0
    assert len(hook.seen) == 1


def _signed(secret: str, headers: dict[str, str], body: bytes) -> bool:
    signed = headers["x-benchgen-timestamp"].encode() + b"." + body
    expected = "sha256=" + hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()
    return hmac.compare_digest(headers["x-benchgen-signature"], expected)


def test_a_receiver_that_failed_gets_the_webhook_again_once_its_wait_is_over(
    world: World, open_local: Runtime, receivers: list[Receiver], clock: ManualClock
) -> None:
    hook = receivers[0]
    hook.status = 503
    ana, secret = _hooked(world, hook)
    run_id = _finished_run(world, open_local, ana)
    assert len(hook.seen) == 1
    assert _claims(world, run_id) == [("webhook", "retrying", "HTTP 503")]
    waiting = "Notification: webhook failed: HTTP 503; tried 1 of 6 times, again in 1 minute"
    assert waiting in _log(world, ana, run_id)

    assert _round(open_local) == 0  # not due yet
    clock.advance(seconds=61)
    hook.status = 204
    assert _round(open_local) == 1
    assert _round(open_local) == 0  # sent: nothing is due any more
    assert len(hook.seen) == 2
    (first_headers, first_body), (headers, body) = hook.seen
    assert body == first_body and _signed(secret, headers, body)
    # Signed at the time it was sent: a receiver that refuses old timestamps takes it.
    assert int(headers["x-benchgen-timestamp"]) - int(first_headers["x-benchgen-timestamp"]) >= 60
    assert _claims(world, run_id) == [("webhook", "sent", "")]
    assert _log(world, ana, run_id)[-1] == "Notification: webhook sent"


def test_a_receiver_that_keeps_failing_is_given_up_on_after_the_last_try(
    world: World, open_local: Runtime, receivers: list[Receiver], clock: ManualClock
) -> None:
    hook = receivers[0]
    ana, run_id = _hooked_run(world, open_local, hook, 500)
    for wait in notifications.RETRY_AFTER:
        clock.advance(seconds=wait.total_seconds() - 1)
        assert _round(open_local) == 0
        clock.advance(seconds=1)
        assert _round(open_local) == 1
    assert len(hook.seen) == notifications.MAX_TRIES
    assert _claims(world, run_id) == [("webhook", "failed", "HTTP 500")]
    log = [line for line in _log(world, ana, run_id) if line.startswith("Notification")]
    assert log[-1] == "Notification: webhook failed: HTTP 500"  # no "again" on the last
    assert log[-2].endswith("tried 5 of 6 times, again in 6 hours")
    clock.advance(hours=20)
    assert _round(open_local) == 0
    assert len(hook.seen) == notifications.MAX_TRIES


def test_a_refusal_or_a_redirect_is_final(
    world: World, open_local: Runtime, receivers: list[Receiver], clock: ManualClock
) -> None:
    hook = receivers[0]
    ana, _ = _hooked(world, hook)
    for status, detail in ((404, "HTTP 404"), (301, "HTTP 301: redirect not followed")):
        hook.status = status
        run_id = _finished_run(world, open_local, ana)
        assert _claims(world, run_id) == [("webhook", "failed", detail)]
    clock.advance(hours=1)
    assert _round(open_local) == 0
    assert len(hook.seen) == 2


def test_a_receiver_that_is_down_is_tried_again(
    world: World, open_local: Runtime, receivers: list[Receiver], clock: ManualClock
) -> None:
    hook = receivers[0]
    ana, _ = _hooked(world, hook)
    with socket.socket() as closed:  # a port nobody listens on
        closed.bind(("127.0.0.1", 0))
        down = f"http://127.0.0.1:{closed.getsockname()[1]}/hook"
    world.do(Principal.web(ana), notifications.update_notification_settings, False, down, False)
    run_id = _finished_run(world, open_local, ana)
    ((channel, status, detail),) = _claims(world, run_id)
    assert (channel, status) == ("webhook", "retrying") and detail.startswith("connection failed")

    # Back up, at the address the user set meanwhile (the setting is read at each try).
    world.do(Principal.web(ana), notifications.update_notification_settings, False, hook.url)
    clock.advance(minutes=1)
    assert _round(open_local) == 1
    assert len(hook.seen) == 1
    assert _claims(world, run_id) == [("webhook", "sent", "")]


def test_a_webhook_removed_while_waiting_is_dropped(
    world: World, open_local: Runtime, receivers: list[Receiver], clock: ManualClock
) -> None:
    hook = receivers[0]
    ana, run_id = _hooked_run(world, open_local, hook, 502)
    world.do(Principal.web(ana), notifications.update_notification_settings, False, None)
    _nothing_more_sent(open_local, clock, hook, minutes=1)
    assert _claims(world, run_id) == [
        ("webhook", "dropped", "the webhook was removed before it was sent")
    ]


def _left_sending(world: World, run_id: str, tries: int = 1) -> None:
    """As if a worker claimed the webhook (its `tries`-th try), then died before it sent or
    recorded anything."""

    def claim(ctx: Context) -> None:
        ctx.session.execute(
            update(RunNotification)
            .where(RunNotification.run_id == run_id)
            .values(status="sending", claimed_at=ctx.now(), tries=tries, next_try_at=None)
        )

    world.ctx_call(WORKER, claim)


def test_a_claim_left_by_a_dead_sender_is_taken_over_and_the_late_sender_writes_nothing(
    world: World, open_local: Runtime, receivers: list[Receiver], clock: ManualClock
) -> None:
    hook = receivers[0]
    ana, run_id = _hooked_run(world, open_local, hook)
    _left_sending(world, run_id)
    stalled = world.ctx_call(WORKER, lambda ctx: ctx.session.scalars(select(RunNotification)).one())
    late = notifications.Delivery(
        stalled.id, run_id, notifications.WEBHOOK, claimed_at=stalled.claimed_at, tries=1
    )
    assert _round(open_local) == 0  # a sender may still be at it
    clock.advance(seconds=notifications.CLAIM_TIMEOUT.total_seconds() + 1)
    assert _round(open_local) == 1
    assert len(hook.seen) == 2  # the first run's send, and this one
    assert _claims(world, run_id) == [("webhook", "sent", "")]

    # The stalled sender wakes up and records a failure: the claim is no longer its own.
    failed = notifications.Sent(500, "HTTP 500", transient=True)
    world.do(WORKER, notifications.record_delivery, late, failed)
    assert _claims(world, run_id) == [("webhook", "sent", "")]
    assert not any("HTTP 500" in line for line in _log(world, ana, run_id))


def test_a_dead_senders_claim_on_the_last_try_is_not_sent_again(
    world: World, open_local: Runtime, receivers: list[Receiver], clock: ManualClock
) -> None:
    hook = receivers[0]
    _, run_id = _hooked_run(world, open_local, hook)
    _left_sending(world, run_id, tries=notifications.MAX_TRIES)
    _nothing_more_sent(open_local, clock, hook, minutes=11)
    assert _claims(world, run_id) == [("webhook", "failed", "gave up after 6 tries")]


def test_two_rounds_never_send_the_same_try(
    world: World, open_local: Runtime, receivers: list[Receiver], clock: ManualClock
) -> None:
    _hooked_run(world, open_local, receivers[0], 503)
    clock.advance(minutes=1)
    first = world.do(WORKER, notifications.claim_due_webhook)
    assert first is not None and first.tries == 2
    assert world.do(WORKER, notifications.claim_due_webhook) is None


def test_old_news_is_not_sent_again(
    world: World, open_local: Runtime, receivers: list[Receiver], clock: ManualClock
) -> None:
    hook = receivers[0]
    _, run_id = _hooked_run(world, open_local, hook)
    _left_sending(world, run_id)
    _nothing_more_sent(open_local, clock, hook, days=1, seconds=1)


def test_every_process_with_workers_sends_due_webhooks_on_its_own(
    world: World, open_local: Runtime, receivers: list[Receiver], clock: ManualClock
) -> None:
    """The rounds run on a thread beside the workers: nobody has to call them."""
    started = start_workers(open_local, 1)
    stop_workers(started)
    assert any(isinstance(runner, WebhookRounds) for runner, _ in started)
    hook = receivers[0]
    _, run_id = _hooked_run(world, open_local, hook, 503)
    hook.status = 204
    clock.advance(minutes=1)
    rounds = WebhookRounds(open_local, every_s=0.01)
    thread = threading.Thread(target=rounds.run_forever, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 10
        while len(hook.seen) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        rounds.stop()
        thread.join(5)
    assert len(hook.seen) == 2 and not thread.is_alive()
    assert _claims(world, run_id) == [("webhook", "sent", "")]
