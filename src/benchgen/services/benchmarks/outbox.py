"""Email to a benchmark's participants (preview, record) and the outbox as recorded; its delivery
is `outbox_delivery`."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import select

from benchgen.core.context import Context
from benchgen.core.errors import Conflict, NotFound, invalid
from benchgen.core.ids import new_id
from benchgen.core.permissions import Action
from benchgen.core.text import require_line, require_text
from benchgen.db.tables import OutboxEmail, User
from benchgen.services import access, audit
from benchgen.services.accounts import mail
from benchgen.services.benchmarks import members
from benchgen.services.specs import MAX_LIST, check_window

MAX_SUBJECT = 300
MAX_BODY = 50_000


@dataclass(frozen=True)
class EmailPreview:
    """Exactly what would be sent, and to whom; `not_mailed`: participants left out because
    their email is not verified (disabled accounts are in neither list)."""

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
    """Who would get this message (participants with the given statuses, a verified email and
    an active account only) and what it says.

    Raises:
        NotFound / PermissionDenied: not the owner, or a token or the agent asked.
        InvalidInput: empty or oversized subject/body, unknown status, or nobody to send to.
    """
    benchmark = access.require_benchmark(ctx, benchmark_id, Action.PARTICIPANTS_EMAIL)
    subject, body = subject.strip(), body.strip()
    if not 1 <= len(subject) <= MAX_SUBJECT or "\n" in subject or "\r" in subject:
        raise invalid(["subject"], f"one line of 1 to {MAX_SUBJECT} characters")
    # What the preview shows must be what recipients read: an encoded word would be shown as
    # other text (and, decoded by the mail library, could start headers of the owner's own).
    problem = mail.header_problem(subject)
    if problem:
        raise invalid(["subject"], problem)
    if not 1 <= len(body) <= MAX_BODY:
        raise invalid(["body"], f"must be 1 to {MAX_BODY} characters")
    subject, body = require_line(subject, ["subject"]), require_text(body, ["body"])
    unknown = [status for status in statuses if status not in members.PARTICIPANT_STATUSES]
    if unknown or not statuses:
        raise invalid(["statuses"], f"choose from {', '.join(members.PARTICIPANT_STATUSES)}")
    people = members.participants_with(ctx, benchmark.id, statuses)
    # The owner's text goes only to addresses their holders proved: anyone can sign up with a
    # stranger's address and join, and must not make this a way to mail that stranger.
    verified = _active_accounts(ctx, [person.user_id for person in people])
    recipients = [person.email for person in people if verified.get(person.user_id)]
    not_mailed = [person.email for person in people if verified.get(person.user_id) is False]
    if not recipients:
        raise invalid(
            ["statuses"],
            "no participant with these statuses has a verified email on an active account; "
            "nothing would be sent",
        )
    return EmailPreview(benchmark.id, subject, body, recipients, list(statuses), not_mailed)


def _active_accounts(ctx: Context, user_ids: list[str]) -> dict[str, bool]:
    """Whether each of these accounts has a verified email, for the active ones only: a
    disabled account is nobody to write to (it is disabled when it may be in the wrong hands),
    neither mailed nor listed as waiting for verification."""
    verified = User.email_verified_at.is_not(None)
    rows = ctx.session.execute(
        select(User.id, verified).where(User.id.in_(user_ids), User.is_active)
    )
    return {user_id: bool(is_verified) for user_id, is_verified in rows}


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
