"""Delivering the outbox: each message claimed by one sender, sent outside any transaction and
its outcome recorded while the claim stands; for the workers' mail rounds and the operator's
`benchgen admin outbox --deliver`."""

from __future__ import annotations

import smtplib
from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import ColumnElement, and_, or_, update

from benchgen.core.config import Settings
from benchgen.core.context import Context
from benchgen.core.permissions import Action
from benchgen.db.tables import OutboxEmail
from benchgen.services import access
from benchgen.services.accounts import _mail_queue, mail
from benchgen.services.accounts.mail import Letter

# How long a message that keeps failing (server unreachable, a 4xx) is retried before it is
# marked `expired`: long enough to ride out a relay's outage, and links it carries (a reset
# link lasts 30 minutes, a verification link 48 hours) are stale by then anyway.
RETRY_FOR = timedelta(days=2)
# How long a message that failed waits before a worker's round tries it again: a relay that
# greylists asks for a few minutes, and a server that is down is not asked every few seconds.
RETRY_EVERY = timedelta(minutes=5)
# A claim this old was left by a sender that died mid-send: its message may be tried again.
# One try takes a few SMTP exchanges of at most 30 s each, far less than this.
CLAIM_TIMEOUT = timedelta(minutes=10)


@dataclass(frozen=True)
class Delivered:
    """What one delivery round did: messages sent, messages that failed and will be tried
    again, and messages refused for good (`bounced`: never tried again)."""

    sent: int = 0
    failed: int = 0
    bounced: int = 0


@dataclass(frozen=True)
class ClaimedLetter:
    """A message one sender claimed (`sending` since `claimed_at`): only it may send it now."""

    letter: Letter
    claimed_at: datetime


@dataclass(frozen=True)
class Outcome:
    """How one try went: `sent`, `failed` (tried again later) or `bounced`; `server_failed`
    when the server, not this message, failed (unreachable, a refused login): the messages after
    it would wait out the same timeout for the same answer."""

    status: str
    error: str = ""
    server_failed: bool = False


def claim_for_operator(ctx: Context, tried: Collection[str] = ()) -> ClaimedLetter | None:
    """Claim the message the operator's push (`benchgen admin outbox --deliver`) sends next,
    or None when none is waiting or no SMTP server is set: it sends every waiting message at
    once, failed ones too, where the workers' rounds (`claim_waiting_mail`) would wait.

    New mail goes first, so failing messages can never hold back a password reset; then every
    message that failed before, except those `tried` already in this push. A message another
    sender holds is left to it, unless its claim was abandoned. Failures that went on for
    RETRY_FOR after a message was queued mark it `expired` first.

    Raises:
        PermissionDenied: not the operator or an admin.
    """
    access.require(ctx, Action.ADMIN_SETTINGS)
    if not ctx.settings.smtp_url:
        return None
    _expire(ctx)
    due = and_(
        or_(OutboxEmail.status.in_(("queued", "failed")), _abandoned_claim(ctx.now())),
        OutboxEmail.id.not_in(tried),
    )
    return _claim_next(ctx, due)


def claim_waiting_mail(ctx: Context) -> ClaimedLetter | None:
    """Claim the message a worker's delivery round sends next, or None when none is due.

    Due: an owner's message to participants (nobody else sends it); account and run mail
    whose own sender (right after the request, or the run's worker) did not get to it within
    CLAIM_TIMEOUT; a message that failed, RETRY_EVERY after its last try; one whose sender
    died holding its claim. Only mail queued within RETRY_FOR: older mail was read from the
    outbox before SMTP was set up, and its links are stale (`deliver_outbox` still sends it).

    Raises:
        PermissionDenied: the principal lacks the `mail.send` grant.
    """
    access.require(ctx, Action.MAIL_SEND)
    _expire(ctx)
    now = ctx.now()
    queued = and_(
        OutboxEmail.status == "queued",
        or_(OutboxEmail.benchmark_id.is_not(None), OutboxEmail.created_at < now - CLAIM_TIMEOUT),
    )
    due = and_(
        OutboxEmail.created_at >= now - RETRY_FOR,
        or_(queued, _failed_before(now - RETRY_EVERY), _abandoned_claim(now)),
    )
    return _claim_next(ctx, due)


def send_claimed(settings: Settings, claim: ClaimedLetter) -> Outcome:
    """Send one claimed message through `BENCHGEN_SMTP_URL` and say how it went.

    Outside any transaction on purpose: a slow mail server must not hold a database lock.
    """
    try:
        mail.smtp_send(settings.smtp_url or "", settings.mail_from, claim.letter)
    except (OSError, smtplib.SMTPException, mail.Unsendable) as exc:
        if mail.is_permanent(exc):
            return Outcome("bounced", mail.failure(exc))
        about_message = isinstance(exc, smtplib.SMTPRecipientsRefused | smtplib.SMTPDataError)
        return Outcome("failed", mail.failure(exc), server_failed=not about_message)
    return Outcome("sent")


def record_sending(ctx: Context, claim: ClaimedLetter, outcome: Outcome) -> None:
    """Record how a claimed message's try went (a no-op when its claim was taken over).

    Raises:
        PermissionDenied: neither a mail sender (the `mail.send` grant) nor the operator or
            an admin (who push the outbox).
    """
    if not access.explain(ctx, Action.MAIL_SEND).allowed:
        access.require(ctx, Action.ADMIN_SETTINGS)
    _mail_queue.record_try(ctx, claim.letter.id, claim.claimed_at, outcome.status, outcome.error)


def _expire(ctx: Context) -> None:
    ctx.session.execute(
        update(OutboxEmail)
        .where(OutboxEmail.status == "failed", OutboxEmail.created_at < ctx.now() - RETRY_FOR)
        .values(status="expired")
        .execution_options(synchronize_session=False)
    )


def _failed_before(moment: datetime) -> ColumnElement[bool]:
    """Failed, and last tried before `moment` (or never by a claim: a run's worker marks its
    mail's failures without one)."""
    tried = or_(OutboxEmail.claimed_at.is_(None), OutboxEmail.claimed_at < moment)
    return and_(OutboxEmail.status == "failed", tried)


def _abandoned_claim(now: datetime) -> ColumnElement[bool]:
    """Claimed CLAIM_TIMEOUT ago and never recorded: its sender died (or hung) mid-send."""
    return and_(OutboxEmail.status == "sending", OutboxEmail.claimed_at < now - CLAIM_TIMEOUT)


def _claim_next(ctx: Context, due: ColumnElement[bool]) -> ClaimedLetter | None:
    """Claim the oldest `due` message, queued ones first (`_mail_queue.claim`)."""
    claimed = _mail_queue.claim(ctx, due, 1)
    return ClaimedLetter(*claimed[0]) if claimed else None
