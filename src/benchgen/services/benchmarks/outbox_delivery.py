"""Delivering the outbox: each message claimed by one sender, sent outside any transaction and
its outcome recorded while the claim stands; for the workers' mail rounds and the operator's
`benchgen admin outbox --deliver`."""

from __future__ import annotations

import smtplib
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import ColumnElement, and_, case, or_, select, update

from benchgen.core.config import Settings
from benchgen.core.context import Context
from benchgen.core.permissions import Action
from benchgen.db.tables import OutboxEmail
from benchgen.services import access
from benchgen.services.accounts import mail
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
# Messages one claim looks at: a sender that lost the first to another tries the next.
CLAIM_TRIES = 5


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


def deliver_outbox(ctx: Context, limit: int = 100) -> Delivered:
    """Send waiting messages now, through `BENCHGEN_SMTP_URL`; without it they stay in the
    outbox. The operator's push: the workers' rounds (`claim_waiting_mail`) send them anyway.

    New mail goes first, so failing messages can never hold back a password reset; then every
    message that failed before is tried once more. A message the server refuses for good (5xx
    to its recipient or content) is `bounced`; one still failing RETRY_FOR after it was queued
    is `expired`. Neither is sent again. Failures are recorded on the message with what went
    wrong, never raised. Each message is claimed first, so one a worker is sending is left to it.
    """
    access.require(ctx, Action.ADMIN_SETTINGS)
    if not ctx.settings.smtp_url:
        return Delivered()
    _expire(ctx)
    due = or_(OutboxEmail.status.in_(("queued", "failed")), _abandoned_claim(ctx.now()))
    tried: list[str] = []  # what failed in this round is not tried twice in it
    outcomes: list[str] = []
    while len(tried) < limit:
        claim = _claim_next(ctx, and_(due, OutboxEmail.id.not_in(tried)))
        if claim is None:
            break
        outcome = send_claimed(ctx.settings, claim)
        _record(ctx, claim, outcome)
        tried.append(claim.letter.id)
        outcomes.append(outcome.status)
    return Delivered(*(outcomes.count(status) for status in ("sent", "failed", "bounced")))


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
    except (OSError, smtplib.SMTPException) as exc:
        if mail.is_permanent(exc):
            return Outcome("bounced", mail.failure(exc))
        about_message = isinstance(exc, smtplib.SMTPRecipientsRefused | smtplib.SMTPDataError)
        return Outcome("failed", mail.failure(exc), server_failed=not about_message)
    return Outcome("sent")


def record_sending(ctx: Context, claim: ClaimedLetter, outcome: Outcome) -> None:
    """Record how a claimed message's try went (a no-op when its claim was taken over).

    Raises:
        PermissionDenied: the principal lacks the `mail.send` grant.
    """
    access.require(ctx, Action.MAIL_SEND)
    _record(ctx, claim, outcome)


def _expire(ctx: Context) -> None:
    ctx.session.execute(
        update(OutboxEmail)
        .where(OutboxEmail.status == "failed", OutboxEmail.created_at < ctx.now() - RETRY_FOR)
        .values(status="expired")
        .execution_options(synchronize_session=False)
    )


def _failed_before(moment: datetime) -> ColumnElement[bool]:
    """Failed, and last tried before `moment` (or never by a claim: the account mail sender
    marks its failures without one)."""
    tried = or_(OutboxEmail.claimed_at.is_(None), OutboxEmail.claimed_at < moment)
    return and_(OutboxEmail.status == "failed", tried)


def _abandoned_claim(now: datetime) -> ColumnElement[bool]:
    """Claimed CLAIM_TIMEOUT ago and never recorded: its sender died (or hung) mid-send."""
    return and_(OutboxEmail.status == "sending", OutboxEmail.claimed_at < now - CLAIM_TIMEOUT)


def _claim_next(ctx: Context, due: ColumnElement[bool]) -> ClaimedLetter | None:
    """Claim the oldest `due` message, queued ones first: a conditional update from what made
    it due to `sending`, so of two senders that both saw it only one wins it.

    PostgreSQL: `FOR UPDATE SKIP LOCKED` passes over a row another sender is claiming; the
    update's condition is checked again on the row as committed. SQLite: the write
    transaction holds the database lock from its first statement.
    """
    first = case((OutboxEmail.status == "queued", 0), else_=1)
    candidates = ctx.session.scalars(
        select(OutboxEmail.id)
        .where(due)
        .order_by(first, OutboxEmail.created_at, OutboxEmail.id)
        .limit(CLAIM_TRIES)
        .with_for_update(skip_locked=True)
    ).all()
    now = ctx.now()
    for message_id in candidates:
        claimed = ctx.session.execute(
            update(OutboxEmail)
            .where(OutboxEmail.id == message_id, due)
            .values(status="sending", claimed_at=now)
            .execution_options(synchronize_session=False)
        )
        if claimed.rowcount == 1:  # type: ignore[attr-defined]
            row = ctx.session.execute(
                select(OutboxEmail.to_email, OutboxEmail.subject, OutboxEmail.body).where(
                    OutboxEmail.id == message_id
                )
            ).one()
            return ClaimedLetter(Letter(message_id, row.to_email, row.subject, row.body), now)
    return None


def _record(ctx: Context, claim: ClaimedLetter, outcome: Outcome) -> None:
    """Write a try's outcome on the message while this sender's claim still stands."""
    sent = outcome.status == "sent"
    ctx.session.execute(
        update(OutboxEmail)
        .where(
            OutboxEmail.id == claim.letter.id,
            OutboxEmail.status == "sending",
            OutboxEmail.claimed_at == claim.claimed_at,
        )
        .values(status=outcome.status, error=outcome.error, sent_at=ctx.now() if sent else None)
        .execution_options(synchronize_session=False)
    )
