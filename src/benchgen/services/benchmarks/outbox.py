"""Email to a benchmark's participants (preview, record); delivering the outbox through SMTP."""

from __future__ import annotations

import smtplib
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy import ColumnElement, and_, case, or_, select, update

from benchgen.core.config import Settings
from benchgen.core.context import Context
from benchgen.core.errors import Conflict, NotFound, invalid
from benchgen.core.ids import new_id
from benchgen.core.permissions import Action
from benchgen.core.text import require_line, require_text
from benchgen.db.tables import OutboxEmail, User
from benchgen.services import access, audit
from benchgen.services.accounts import mail
from benchgen.services.accounts.mail import Letter
from benchgen.services.benchmarks import members
from benchgen.services.specs import MAX_LIST, check_window

MAX_SUBJECT = 300
MAX_BODY = 50_000
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
class EmailPreview:
    """Exactly what would be sent, and to whom; `not_mailed`: participants left out because
    their email is not verified."""

    benchmark_id: str
    subject: str
    body: str
    recipients: list[str]
    statuses: list[str]
    not_mailed: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class OutboxLine:
    """One recorded message."""

    id: str
    batch_id: str
    to_email: str
    subject: str
    status: str
    error: str


@dataclass(frozen=True)
class SentMessage:
    """One message sent to a participant of a benchmark, as its owner sees the record."""

    batch_id: str
    to_email: str
    subject: str
    status: str
    created_at: datetime


def preview_participant_email(
    ctx: Context,
    benchmark_id: str,
    subject: str,
    body: str,
    statuses: tuple[str, ...] = ("active",),
) -> EmailPreview:
    """Who would get this message (participants with the given statuses and a verified email
    only) and what it says.

    Raises:
        NotFound / PermissionDenied: not the owner, or a token or the agent asked.
        InvalidInput: empty or oversized subject/body, unknown status, or nobody to send to.
    """
    benchmark = access.require_benchmark(ctx, benchmark_id, Action.PARTICIPANTS_EMAIL)
    subject, body = subject.strip(), body.strip()
    if not 1 <= len(subject) <= MAX_SUBJECT or "\n" in subject or "\r" in subject:
        raise invalid(["subject"], f"one line of 1 to {MAX_SUBJECT} characters")
    if not 1 <= len(body) <= MAX_BODY:
        raise invalid(["body"], f"must be 1 to {MAX_BODY} characters")
    subject, body = require_line(subject, ["subject"]), require_text(body, ["body"])
    unknown = [status for status in statuses if status not in members.PARTICIPANT_STATUSES]
    if unknown or not statuses:
        raise invalid(["statuses"], f"choose from {', '.join(members.PARTICIPANT_STATUSES)}")
    people = members.participants_with(ctx, benchmark.id, statuses)
    # The owner's text goes only to addresses their holders proved: anyone can sign up with a
    # stranger's address and join, and must not make this a way to mail that stranger.
    verified = _verified_ids(ctx, [person.user_id for person in people])
    recipients = [person.email for person in people if person.user_id in verified]
    not_mailed = [person.email for person in people if person.user_id not in verified]
    if not recipients:
        raise invalid(
            ["statuses"],
            "no participant with these statuses has a verified email; nothing would be sent",
        )
    return EmailPreview(benchmark.id, subject, body, recipients, list(statuses), not_mailed)


def _verified_ids(ctx: Context, user_ids: list[str]) -> set[str]:
    return set(
        ctx.session.scalars(
            select(User.id).where(User.id.in_(user_ids), User.email_verified_at.is_not(None))
        )
    )


def send_participant_email(
    ctx: Context,
    benchmark_id: str,
    subject: str,
    body: str,
    statuses: tuple[str, ...] = ("active",),
    shown: tuple[str, ...] | None = None,
) -> EmailPreview:
    """Record one message per recipient in the outbox, where the workers' delivery rounds
    send them through SMTP (or, without it, the operator reads them); with `shown`, the
    recipients a preview showed, only if they are still exactly those.

    Raises:
        As `preview_participant_email`; Conflict: the recipients changed since `shown`.
    """
    preview = preview_participant_email(ctx, benchmark_id, subject, body, statuses)
    if shown is not None and sorted(shown) != sorted(preview.recipients):
        raise Conflict(
            "The participants changed since the preview: check who it goes to now.",
            {"recipients": preview.recipients},
        )
    batch = new_id("mailb")
    ctx.session.add_all(
        OutboxEmail(
            id=new_id("mail"),
            batch_id=batch,
            benchmark_id=preview.benchmark_id,
            sender_user_id=ctx.principal.user_id,
            to_email=address,
            subject=preview.subject,
            body=preview.body,
            status="queued",
            created_at=ctx.now(),
        )
        for address in preview.recipients
    )
    audit.record(
        ctx,
        audit.AuditAction.PARTICIPANTS_EMAIL,
        "benchmark",
        preview.benchmark_id,
        batch_id=batch,
        recipients=len(preview.recipients),
        subject=preview.subject,
    )
    return preview


def list_sent(ctx: Context, benchmark_id: str, limit: int = 200) -> list[SentMessage]:
    """What was sent to a benchmark's participants, newest first (owner only).

    Raises:
        NotFound / PermissionDenied: not the owner, or a token or the agent asked.
        InvalidInput: limit outside 1..MAX_LIST.
    """
    benchmark = access.require_benchmark(ctx, benchmark_id, Action.PARTICIPANTS_EMAIL)
    check_window(limit, 0, MAX_LIST)
    rows = ctx.session.scalars(
        select(OutboxEmail)
        .where(OutboxEmail.benchmark_id == benchmark.id)
        .order_by(OutboxEmail.created_at.desc(), OutboxEmail.to_email)
        .limit(limit)
    )
    return [SentMessage(r.batch_id, r.to_email, r.subject, r.status, r.created_at) for r in rows]


def list_outbox(ctx: Context, limit: int = 100) -> list[OutboxLine]:
    """Recorded messages, newest first (operator and admins: the outbox is how they read mail
    when no SMTP server is configured)."""
    access.require(ctx, Action.ADMIN_SETTINGS)
    rows = ctx.session.scalars(
        select(OutboxEmail).order_by(OutboxEmail.created_at.desc(), OutboxEmail.id).limit(limit)
    )
    return [OutboxLine(r.id, r.batch_id, r.to_email, r.subject, r.status, r.error) for r in rows]


def read_outbox_message(ctx: Context, message_id: str) -> str:
    """The full text of one recorded message (operator and admins): without SMTP, this is how
    an operator reads a verification or password-reset link to hand it over.

    Raises:
        PermissionDenied: not an admin or the operator.
        NotFound: no such message.
    """
    access.require(ctx, Action.ADMIN_SETTINGS)
    row = ctx.session.get(OutboxEmail, message_id)
    if row is None:
        raise NotFound("No such message.", {"id": message_id})
    return f"To: {row.to_email}\nSubject: {row.subject}\n\n{row.body}"


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
