"""Outgoing mail: one outbox for every message, sent through SMTP when one is configured."""

from __future__ import annotations

import smtplib
import ssl
from dataclasses import dataclass
from email.message import EmailMessage
from urllib.parse import unquote, urlsplit

from sqlalchemy import select

from benchgen.core.config import Settings
from benchgen.core.context import Context
from benchgen.core.permissions import Action
from benchgen.db.tables import OutboxEmail
from benchgen.services import access


@dataclass(frozen=True)
class Letter:
    """One queued message, as the sender needs it."""

    id: str
    to_email: str
    subject: str
    body: str


def queued_account_mail(ctx: Context, to_email: str, limit: int = 10) -> list[Letter]:
    """Account mail to `to_email` still waiting to be sent, oldest first.

    The edge that just queued a message for this address asks, to send it after its response,
    as a system principal holding the `mail.send` grant.

    Raises:
        PermissionDenied: the principal lacks the `mail.send` grant.
    """
    access.require(ctx, Action.MAIL_SEND)
    rows = ctx.session.scalars(
        select(OutboxEmail)
        .where(
            OutboxEmail.to_email == to_email,
            OutboxEmail.benchmark_id.is_(None),
            OutboxEmail.status == "queued",
        )
        .order_by(OutboxEmail.created_at, OutboxEmail.id)
        .limit(limit)
    )
    return [Letter(row.id, row.to_email, row.subject, row.body) for row in rows]


def send_letter(settings: Settings, letter: Letter) -> str:
    """Send one message through `BENCHGEN_SMTP_URL`; returns "" or what went wrong.

    Outside any transaction on purpose: a slow mail server must not hold a database lock.
    """
    if not settings.smtp_url:
        return "no SMTP server configured"
    try:
        smtp_send(settings.smtp_url, settings.mail_from, letter)
    except (OSError, smtplib.SMTPException) as exc:
        return failure(exc)
    return ""


def failure(exc: OSError | smtplib.SMTPException) -> str:
    """What went wrong sending, in words ("Connection refused", "Name or service not known"),
    the failure's kind when it says nothing more. An SMTP reply is given by its code only
    ("SMTPRecipientsRefused: recipient refused (550)")."""
    name = type(exc).__name__
    # The server's reply text names the recipient (and the refused-recipients error is a dict
    # of addresses); this text reaches run logs that others read, so only the code is kept.
    if isinstance(exc, smtplib.SMTPRecipientsRefused):
        codes = sorted({str(code) for code, _ in exc.recipients.values()})
        return f"{name}: recipient refused ({', '.join(codes)})"
    if isinstance(exc, smtplib.SMTPResponseException):
        return f"{name}: SMTP {exc.smtp_code}"
    said = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    return f"{name}: {said}" if said else name


def is_permanent(exc: OSError | smtplib.SMTPException) -> bool:
    """Whether the server refused this message for good (a 5xx reply to its recipient or its
    content): sent again, it would only be refused again. A refused login or sender is the
    deployment's settings, not the message's, and is worth retrying once they are fixed."""
    if isinstance(exc, smtplib.SMTPRecipientsRefused):
        return all(code >= 500 for code, _ in exc.recipients.values())
    return isinstance(exc, smtplib.SMTPDataError) and exc.smtp_code >= 500


def record_outcome(ctx: Context, letter_id: str, error: str) -> None:
    """Mark a queued message sent (no error) or failed (the failure's name).

    Raises:
        PermissionDenied: the principal lacks the `mail.send` grant.
    """
    access.require(ctx, Action.MAIL_SEND)
    row = ctx.session.get(OutboxEmail, letter_id)
    if row is None or row.status != "queued":
        return
    if error:
        row.status, row.error = "failed", error
    else:
        row.status, row.sent_at = "sent", ctx.now()


def smtp_send(url: str, sender: str, letter: Letter | OutboxEmail) -> None:
    """Deliver one message to the SMTP server `url` (smtp:// or smtp+starttls://, with
    optional user:password@). With STARTTLS the server's certificate and host name are checked
    against the system's trusted CAs (`SSL_CERT_FILE` / `SSL_CERT_DIR` name a private one).

    Raises:
        OSError, smtplib.SMTPException: the server could not be reached or refused it, or its
            certificate is not trusted for its name (ssl.SSLCertVerificationError, an OSError).
    """
    parts = urlsplit(url)
    email = EmailMessage()
    email["From"], email["To"], email["Subject"] = sender, letter.to_email, letter.subject
    email.set_content(letter.body)
    with smtplib.SMTP(parts.hostname or "localhost", parts.port or 25, timeout=30) as smtp:
        if parts.scheme == "smtp+starttls":
            # Without a context smtplib checks nothing: whoever sits on the path would read the
            # password and every emailed link. The default context verifies the certificate
            # and that it names the host connected to.
            smtp.starttls(context=ssl.create_default_context())
        if parts.username:
            smtp.login(unquote(parts.username), unquote(parts.password or ""))
        smtp.send_message(email)
