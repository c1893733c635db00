"""Notifications when a run ends: the user's settings (mail, a signed webhook), and their delivery
once per run and channel — claimed in the database before anything is sent; a webhook whose
receiver was away is tried again later, a few times."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from secrets import token_urlsafe
from typing import Any
from urllib.parse import urlsplit

from sqlalchemy import ColumnElement, and_, func, or_, select, update
from sqlalchemy.exc import IntegrityError

from benchgen.core.config import Settings
from benchgen.core.context import Context
from benchgen.core.errors import Conflict, invalid
from benchgen.core.ids import new_id
from benchgen.core.permissions import Action
from benchgen.core.statuses import RUN_FINAL
from benchgen.core.text import plural, require_line
from benchgen.db.tables import (
    Benchmark,
    NotificationSetting,
    OutboxEmail,
    Run,
    RunNotification,
    User,
)
from benchgen.evals import netguard
from benchgen.evals.types import FatalModelError
from benchgen.services import _keyring, _model_specs, access, audit
from benchgen.services.accounts import _mail_queue, mail
from benchgen.services.accounts.mail import Letter
from benchgen.services.runs import _log_writer, _webhook_delivery, leaderboards
from benchgen.services.runs._webhook_delivery import Sent, Webhook

MAIL, WEBHOOK = "mail", "webhook"
UNVERIFIED = (
    "Run mail goes only to a verified email address: verify yours first "
    "(the link in the verification mail), then turn this on."
)
KEY_CHANGED = (
    "the webhook's signing secret cannot be decrypted with this worker's key (the "
    "deployment's BENCHGEN_SECRET_KEY changed): rotate the secret in the notification settings"
)
MAX_URL = 2000
EVENT = "run.finished"
# How long a webhook that failed in a way that may pass (no reply, a 5xx, 429) waits before each
# try after the first: a receiver restarting is back within minutes, one down for the night by
# the morning. After the last, it is marked failed for good.
RETRY_AFTER = (
    timedelta(minutes=1),
    timedelta(minutes=5),
    timedelta(minutes=30),
    timedelta(hours=2),
    timedelta(hours=6),
)
MAX_TRIES = len(RETRY_AFTER) + 1
# A claim this old was left by a worker that died mid-send (one try takes TIMEOUT_S at most):
# the webhook rounds send it again. They leave alone what is older than RETRY_WINDOW, whose
# news is stale.
CLAIM_TIMEOUT = timedelta(minutes=10)
RETRY_WINDOW = timedelta(days=1)


@dataclass(frozen=True)
class NotificationSettings:
    """Where my run notifications go. `webhook_secret` is only set in the answer that created or
    rotated it: it is stored encrypted and never shown again."""

    email_on_finish: bool
    webhook_url: str | None
    has_webhook_secret: bool
    webhook_secret: str | None = None
    updated_at: datetime | None = None


def get_notification_settings(ctx: Context) -> NotificationSettings:
    """My notification settings (all off until I set them).

    Raises:
        PermissionDenied: the agent asked, or a token without the `runs` scope.
    """
    access.require(ctx, Action.NOTIFICATIONS_MANAGE)
    row = ctx.session.get(NotificationSetting, ctx.principal.user_id)
    return _view(row)


def update_notification_settings(
    ctx: Context, email_on_finish: bool, webhook_url: str | None, rotate_secret: bool = False
) -> NotificationSettings:
    """Replace my settings. A webhook gets a new signing secret when it is first set or when
    asked (`rotate_secret`); the answer carries it this once.

    Raises:
        PermissionDenied: the agent asked, or a token without the `runs` scope.
        InvalidInput: the address is not an http(s) URL with a host, carries credentials, or
            names an internal address the operator has not opened; mail is turned on while
            the account's email is not verified; or a new secret is asked for without a webhook.
    """
    access.require(ctx, Action.NOTIFICATIONS_MANAGE)
    user_id = ctx.principal.user_id
    assert user_id is not None  # an own-account action: a user is acting
    url = checked_url(ctx, webhook_url) if webhook_url and webhook_url.strip() else None
    if rotate_secret and url is None:
        # The whole setting is replaced: a rotation that forgot the address would silently
        # remove the webhook (and its secret) instead of renewing it.
        raise invalid(["rotate_secret"], "needs a webhook_url: a secret signs a webhook's requests")
    row = ctx.session.get(NotificationSetting, user_id)
    if email_on_finish and not (row and row.email_on_finish) and not _verified(ctx, user_id):
        raise invalid(["email_on_finish"], UNVERIFIED)
    if row is None:
        row = NotificationSetting(user_id=user_id, created_at=ctx.now())
        ctx.session.add(row)
    secret = None
    if url and (rotate_secret or not row.webhook_secret_enc):
        secret = "whsec_" + token_urlsafe(32)
        row.webhook_secret_enc = _keyring.encrypt(ctx, secret)
    row.email_on_finish, row.webhook_url, row.updated_at = email_on_finish, url, ctx.now()
    if url is None:
        row.webhook_secret_enc = None  # a webhook set again later gets a fresh secret
    audit.record(
        ctx,
        audit.AuditAction.NOTIFICATIONS_SET,
        "user",
        user_id,
        email_on_finish=email_on_finish,
        webhook_url=url,
        secret_rotated=secret is not None,
    )
    return _view(row, secret)


def checked_url(ctx: Context, raw: str) -> str:
    """The webhook address, trimmed, if its shape is acceptable and its host is public by the
    rules a model's base URL is held to. Delivery checks the addresses it connects to again:
    DNS may answer differently later.

    Raises:
        InvalidInput: not http(s) with a host and a valid port, not ASCII, user:password
            inside, a fragment, over 2000 characters, or a host that does not resolve or
            resolves to an internal address (127.1, 0x7f000001, localhost…) not allow-listed.
    """
    loc: list[str | int] = ["webhook_url"]
    url = require_line(raw, loc)
    if len(url) > MAX_URL:
        raise invalid(loc, f"must be at most {MAX_URL} characters")
    if not url.isascii():
        # Refused rather than rewritten: what is stored and shown is then exactly what is
        # requested, and a request line or Host header can only carry ASCII.
        raise invalid(
            loc,
            "must be plain ASCII: percent-encode other characters (ü is %C3%BC) and give an "
            "international host name in its xn-- form",
        )
    try:
        parts = urlsplit(url)
    except ValueError:  # an unclosed IPv6 bracket ("http://[::1/x") and the like
        raise invalid(loc, "is not a valid URL: check the host's brackets") from None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise invalid(loc, "must be an http:// or https:// address with a host")
    if parts.username or parts.password or parts.fragment:
        # Credentials in the address would be shown on the settings page and in audit rows.
        raise invalid(loc, "must not contain a user name, password or #fragment")
    try:
        # Resolved as the system resolver reads it: shorthand and numeric forms of an address
        # (127.1, 0x7f000001, 2130706433) and names are judged by where they lead.
        netguard.check_endpoint(url, _model_specs.allowlist(ctx))
    except FatalModelError as exc:
        raise invalid(loc, str(exc)) from None
    return url


def notify_run_finished(ctx: Context, run_id: str) -> None:
    """Claim, in the caller's transaction, the notifications the run's end calls for: a mail in
    the outbox and/or a pending webhook. A (run, channel) already claimed is left alone, so a
    redelivered job notifies nobody twice. Nothing is sent over the network here.

    Raises:
        PermissionDenied: the principal lacks the `run.execute` grant.
    """
    access.require(ctx, Action.RUN_EXECUTE)
    run = ctx.session.get(Run, run_id)
    if run is None or run.status not in RUN_FINAL:
        return
    setting = ctx.session.get(NotificationSetting, run.launched_by)
    if setting is None or not _active(ctx, run.launched_by):
        # Disabling an account stops its runs: whoever held it must not learn of their end.
        return
    if setting.email_on_finish:
        _claim(ctx, run, MAIL)
    if setting.webhook_url:
        _claim(ctx, run, WEBHOOK)


def _claim(ctx: Context, run: Run, channel: str) -> None:
    taken = select(RunNotification.id).where(
        RunNotification.run_id == run.id, RunNotification.channel == channel
    )
    if ctx.session.scalar(taken) is not None:
        return
    row = RunNotification(
        id=new_id("ntf"),
        run_id=run.id,
        user_id=run.launched_by,
        channel=channel,
        status="pending",
        created_at=ctx.now(),
    )
    try:
        # The unique (run, channel) pair decides a race between two workers: the loser's
        # savepoint is undone and it sends nothing.
        with ctx.session.begin_nested():
            ctx.session.add(row)
            ctx.session.flush()
    except IntegrityError:
        return
    if channel == MAIL:
        user = ctx.session.get(User, run.launched_by)
        assert user is not None  # runs keep their launcher (users are never deleted)
        if user.email_verified_at is None:
            # The letter carries a benchmark title anyone may choose: mailed to an address
            # nobody proved, it would let anyone send their text to any inbox from our server.
            row.status, row.detail = "dropped", "the email address is not verified"
            return
        subject, body = _letter(ctx, run, user.id)
        row.outbox_id = _mail_queue.record_mail(ctx, user.email, subject, body)
        row.status = "queued"


def _active(ctx: Context, user_id: str) -> bool:
    user = ctx.session.get(User, user_id)
    return user is not None and user.is_active


def _verified(ctx: Context, user_id: str) -> bool:
    user = ctx.session.get(User, user_id)
    return user is not None and user.email_verified_at is not None


def _letter(ctx: Context, run: Run, recipient: str) -> tuple[str, str]:
    benchmark = ctx.session.get(Benchmark, run.benchmark_id)
    title = benchmark.title if benchmark else run.benchmark_id
    shown = _shown_scores(ctx, run, recipient)
    scores = ", ".join(f"{key} {value}" for key, value in sorted(shown.items())) or "none"
    body = (
        f"Your run {run.id} on “{title}” ended: {run.status}.\n"
        f"Scores: {scores}\n\n{ctx.settings.link(f'/runs/{run.id}')}\n\n"
        f"Change these notifications at {ctx.settings.link('/settings/notifications')}\n"
    )
    return f"BenchGen: your run {run.status}", body


def _shown_scores(ctx: Context, run: Run, recipient: str) -> dict[str, Any]:
    """The run's scores its recipient may see: without the bundle's hidden columns unless they
    are the benchmark's organisers (the worker sends it: the recipient decides, not the sender)."""
    user = ctx.session.get(User, recipient)
    assert user is not None  # users are never deleted
    return leaderboards.shown_scores(run.scores, leaderboards.hidden_from(ctx, run, viewer=user))


@dataclass(frozen=True)
class Delivery:
    """One claimed notification to send after the run's transaction committed."""

    id: str
    run_id: str
    channel: str
    webhook: Webhook | None = None
    letter: Letter | None = None
    allowlist: frozenset[str] = frozenset()
    claimed_at: datetime | None = None  # the claim: the letter's in the outbox, or the webhook's
    tries: int = 0  # webhook requests sent, this one included


def claim_deliveries(ctx: Context, run_id: str) -> list[Delivery]:
    """Take the run's notifications still to send, each for this caller alone (a conditional
    update that only one transaction can win). Mail waits in the outbox without SMTP.

    Raises:
        PermissionDenied: the principal lacks the `run.execute` grant.
    """
    access.require(ctx, Action.RUN_EXECUTE)
    rows = ctx.session.scalars(
        select(RunNotification).where(
            RunNotification.run_id == run_id, RunNotification.status.in_(("pending", "queued"))
        )
    ).all()
    claimed = []
    for row in rows:
        if row.channel == MAIL and not ctx.settings.smtp_url:
            continue  # stays queued in the outbox, where the operator reads or sends it
        if _won(ctx, row, RunNotification.status == row.status):
            claimed.append(_delivery(ctx, row))
    return [delivery for delivery in claimed if delivery is not None]


def claim_due_webhook(ctx: Context) -> Delivery | None:
    """Take, for this caller alone, the next webhook due again: one that failed in a way that
    may pass once its wait is over, or one whose sender died holding its claim (or before it
    claimed it); None when none is. One past its last try is marked failed instead.

    Raises:
        PermissionDenied: the principal lacks the `run.execute` grant.
    """
    access.require(ctx, Action.RUN_EXECUTE)
    now = ctx.now()
    due = and_(
        RunNotification.channel == WEBHOOK,
        RunNotification.created_at >= now - RETRY_WINDOW,
        _due_again(now),
    )
    oldest = select(RunNotification).where(due).order_by(RunNotification.created_at).limit(1)
    while (row := ctx.session.scalars(oldest).first()) is not None:
        if not _won(ctx, row, due):
            continue  # another round took it meanwhile
        if row.tries > MAX_TRIES:  # its last try's sender died: it is not sent once more
            _mark(ctx, row.id, "failed", f"gave up after {MAX_TRIES} tries")
            _log_writer.append(ctx, row.run_id, "Notification: webhook failed: no more tries")
            continue
        delivery = _delivery(ctx, row)
        if delivery is not None:
            return delivery
    return None


def _due_again(now: datetime) -> ColumnElement[bool]:
    abandoned = now - CLAIM_TIMEOUT
    return or_(
        and_(RunNotification.status == "retrying", RunNotification.next_try_at <= now),
        and_(
            RunNotification.status.in_(("pending", "sending")),
            func.coalesce(RunNotification.claimed_at, RunNotification.created_at) < abandoned,
        ),
    )


def _won(ctx: Context, row: RunNotification, still: ColumnElement[bool]) -> bool:
    """Claim `row` if it still meets `still`: a conditional update only one transaction wins.
    The row is refreshed with the claim (its time, and one more try for a webhook)."""
    claimed_at = ctx.now()
    won = ctx.session.execute(
        update(RunNotification)
        .where(RunNotification.id == row.id, still)
        .values(status="sending", claimed_at=claimed_at, tries=RunNotification.tries + 1)
        .execution_options(synchronize_session=False)
    )
    if won.rowcount != 1:  # type: ignore[attr-defined]
        return False
    ctx.session.refresh(row)
    return True


def _delivery(ctx: Context, row: RunNotification) -> Delivery | None:
    if row.channel == MAIL:
        # Claimed in the outbox as the mail thread and the operator's push claim theirs: left
        # queued there, the letter was theirs to send too, and went twice.
        due = and_(OutboxEmail.id == row.outbox_id, OutboxEmail.status == "queued")
        won = _mail_queue.claim(ctx, due, 1)
        if not won:
            return None  # another sender has it
        letter, claimed_at = won[0]
        return Delivery(row.id, row.run_id, MAIL, letter=letter, claimed_at=claimed_at)
    setting = ctx.session.get(NotificationSetting, row.user_id)
    run = ctx.session.get(Run, row.run_id)
    if setting is None or not setting.webhook_url or not setting.webhook_secret_enc or not run:
        _mark(ctx, row.id, "dropped", "the webhook was removed before it was sent")
        return None
    if not _active(ctx, row.user_id):
        _mark(ctx, row.id, "dropped", "the account was disabled before it was sent")
        return None
    try:
        secret = _keyring.decrypt(ctx, setting.webhook_secret_enc)
    except Conflict:
        # Raised, it failed the job on every redelivery and rolled back the other claims.
        _mark(ctx, row.id, "failed", KEY_CHANGED)
        return None
    webhook = _webhook(ctx, run, setting, secret)
    allowlist = _model_specs.allowlist(ctx)
    return Delivery(
        row.id,
        row.run_id,
        WEBHOOK,
        webhook=webhook,
        allowlist=allowlist,
        claimed_at=row.claimed_at,
        tries=row.tries,
    )


def _webhook(ctx: Context, run: Run, setting: NotificationSetting, secret: str) -> Webhook:
    payload = {
        "event": EVENT,
        "run_id": run.id,
        "benchmark_id": run.benchmark_id,
        "status": run.status,
        "scores": _shown_scores(ctx, run, setting.user_id),
        "finished_at": run.finished_at.isoformat() if run.finished_at else None,
    }
    body = json.dumps(payload, separators=(",", ":"), sort_keys=True).encode()
    # Unix seconds: receivers compare it with their clock to refuse replayed requests.
    timestamp = str(int(ctx.now().timestamp()))
    headers = (
        ("x-benchgen-event", EVENT),
        ("x-benchgen-timestamp", timestamp),
        ("x-benchgen-signature", _webhook_delivery.signature(secret, timestamp, body)),
    )
    assert setting.webhook_url is not None  # checked by the caller
    return Webhook(setting.webhook_url, body, headers)


def send_delivery(settings: Settings, delivery: Delivery) -> Sent:
    """Send one claimed notification, outside any transaction, and say how it went. Never
    raises: a receiver that fails must not fail the run's job. (A letter that failed is the
    outbox's to try again, never this.)"""
    if delivery.letter is not None:
        return Sent(None, mail.send_letter(settings, delivery.letter))
    assert delivery.webhook is not None  # a delivery is a letter or a webhook
    # The operator's allow-list for model endpoints opens private addresses to webhooks too.
    return _webhook_delivery.send(delivery.webhook, delivery.allowlist)


def record_delivery(ctx: Context, delivery: Delivery, sent: Sent) -> None:
    """Mark a claimed notification sent, failed, or (a webhook whose failure may pass, with
    tries left) to be tried again later; and say so in the run's log. A webhook's outcome is
    written only while its claim stands: a sender that stalled past CLAIM_TIMEOUT lost it.

    Raises:
        PermissionDenied: the principal lacks the `run.execute` grant.
    """
    access.require(ctx, Action.RUN_EXECUTE)
    error = sent.error
    status = "failed" if error else "sent"
    outcome = f"{delivery.channel} failed: {error}" if error else f"{delivery.channel} sent"
    if delivery.letter is not None:
        _mail_queue.record_try(ctx, delivery.letter.id, delivery.claimed_at, status, error)
        _mark(ctx, delivery.id, status, error)
    elif error and sent.transient and delivery.tries < MAX_TRIES:
        wait = RETRY_AFTER[delivery.tries - 1]
        again = ctx.now() + wait
        if not _mark(ctx, delivery.id, "retrying", error, delivery.claimed_at, again):
            return
        outcome += f"; tried {delivery.tries} of {MAX_TRIES} times, again in {_spelled(wait)}"
    elif not _mark(ctx, delivery.id, status, error, delivery.claimed_at):
        return
    _log_writer.append(ctx, delivery.run_id, f"Notification: {outcome}")


def _spelled(wait: timedelta) -> str:
    minutes = int(wait.total_seconds() // 60)
    return plural(minutes, "minute") if minutes < 60 else plural(minutes // 60, "hour")


def _mark(
    ctx: Context,
    notification_id: str,
    status: str,
    detail: str,
    claimed_at: datetime | None = None,
    next_try_at: datetime | None = None,
) -> bool:
    """Write a notification's outcome, only while the claim made at `claimed_at` stands when
    given; whether it was written."""
    held = [RunNotification.id == notification_id]
    if claimed_at is not None:
        held += [RunNotification.status == "sending", RunNotification.claimed_at == claimed_at]
    written = ctx.session.execute(
        update(RunNotification)
        .where(*held)
        .values(
            status=status,
            detail=detail[:2000],
            sent_at=ctx.now() if status == "sent" else None,
            next_try_at=next_try_at,
        )
        .execution_options(synchronize_session=False)
    )
    return bool(written.rowcount)  # type: ignore[attr-defined]


def _view(row: NotificationSetting | None, secret: str | None = None) -> NotificationSettings:
    if row is None:
        return NotificationSettings(False, None, False)
    has_secret = row.webhook_secret_enc is not None
    return NotificationSettings(
        row.email_on_finish, row.webhook_url, has_secret, secret, row.updated_at
    )
