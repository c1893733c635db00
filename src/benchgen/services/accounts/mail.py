"""Outgoing mail: one outbox for every message, sent through SMTP when one is configured."""

from __future__ import annotations

import re
import smtplib
import ssl
from email.message import EmailMessage
from urllib.parse import unquote, urlsplit

from sqlalchemy import and_

from benchgen.core.config import Settings
from benchgen.core.context import Context
from benchgen.core.permissions import Action
from benchgen.db.tables import OutboxEmail
from benchgen.services import access
from benchgen.services.accounts import _mail_queue
from benchgen.services.accounts._mail_queue import Letter as Letter

# An RFC 2047 encoded word, also where mail programs decode one that the standard forbids
# (inside a word).
_ENCODED_WORD = re.compile(r"=\?[^?\s]*\?[bq]\?[^?\s]*\?=", re.IGNORECASE)


class Unsendable(ValueError):
    """The message cannot be written as mail as it stands (a header that would not say what
    was given), or the server cannot take its address: sent again, it would fail again."""


def queued_account_mail(ctx: Context, to_email: str, limit: int = 10) -> list[Letter]:
    """Claim the account mail to `to_email` still waiting to be sent, oldest first: each
    message is then `sending`, this caller's alone to send and to record (`record_outcome`).

    The edge that just queued a message for this address asks, to send it after its response,
    as a system principal holding the `mail.send` grant. The claim is the one the delivery
    rounds and the operator's push make: without it, two requests for one address (or a
    request and the operator) read the same queued message and both sent it.

    Raises:
        PermissionDenied: the principal lacks the `mail.send` grant.
    """
    access.require(ctx, Action.MAIL_SEND)
    due = and_(
        OutboxEmail.to_email == to_email,
        OutboxEmail.benchmark_id.is_(None),
        OutboxEmail.status == "queued",
    )
    return [letter for letter, _ in _mail_queue.claim(ctx, due, limit)]


def send_letter(settings: Settings, letter: Letter) -> str:
    """Send one message through `BENCHGEN_SMTP_URL`; returns "" or what went wrong.

    Outside any transaction on purpose: a slow mail server must not hold a database lock.
    """
    if not settings.smtp_url:
        return "no SMTP server configured"
    try:
        smtp_send(settings.smtp_url, settings.mail_from, letter)
    except (OSError, smtplib.SMTPException, Unsendable) as exc:
        return failure(exc)
    return ""


def failure(exc: OSError | smtplib.SMTPException | Unsendable) -> str:
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


def is_permanent(exc: OSError | smtplib.SMTPException | Unsendable) -> bool:
    """Whether the server refused this message for good (a 5xx reply to its recipient or its
    content), or it cannot be sent as it stands: sent again, it would only be refused again.
    A refused login or sender is the deployment's settings, not the message's, and is worth
    retrying once they are fixed."""
    if isinstance(exc, Unsendable):
        return True
    if isinstance(exc, smtplib.SMTPRecipientsRefused):
        return all(code >= 500 for code, _ in exc.recipients.values())
    return isinstance(exc, smtplib.SMTPDataError) and exc.smtp_code >= 500


def record_outcome(ctx: Context, letter_id: str, error: str) -> None:
    """Mark a message claimed by `queued_account_mail` sent (no error) or failed (the
    failure's name; the delivery rounds try it again, and give up on a bounce).

    Raises:
        PermissionDenied: the principal lacks the `mail.send` grant.
    """
    access.require(ctx, Action.MAIL_SEND)
    _mail_queue.record_try(ctx, letter_id, None, "failed" if error else "sent", error)


def smtp_send(url: str, sender: str, letter: Letter | OutboxEmail) -> None:
    """Deliver one message to the SMTP server `url` (smtp:// or smtp+starttls://, with
    optional user:password@), to its one recipient only. With STARTTLS the server's
    certificate and host name are checked against the system's trusted CAs (`SSL_CERT_FILE`
    / `SSL_CERT_DIR` name a private one).

    Raises:
        Unsendable: the message cannot be written as mail as it stands, or this server cannot
            take its non-ASCII recipient.
        OSError, smtplib.SMTPException: the server could not be reached or refused it, or its
            certificate is not trusted for its name (ssl.SSLCertVerificationError, an OSError).
    """
    parts = urlsplit(url)
    recipient = _ascii_domain(letter.to_email)
    email = _message(sender, recipient, letter)
    with smtplib.SMTP(parts.hostname or "localhost", parts.port or 25, timeout=30) as smtp:
        if parts.scheme == "smtp+starttls":
            # Without a context smtplib checks nothing: whoever sits on the path would read the
            # password and every emailed link. The default context verifies the certificate
            # and that it names the host connected to.
            smtp.starttls(context=ssl.create_default_context())
        if parts.username:
            smtp.login(unquote(parts.username), unquote(parts.password or ""))
        if not recipient.isascii() and not _takes_utf8(smtp):
            # Said of the message, not the server: tried again, it would stall every round.
            raise Unsendable("the mail server takes no non-ASCII address (no SMTPUTF8)")
        # smtplib takes the envelope's recipients from the headers, which `_message` checked
        # name the one recipient and nobody else.
        smtp.send_message(email)


def _takes_utf8(smtp: smtplib.SMTP) -> bool:
    smtp.ehlo_or_helo_if_needed()
    return smtp.has_extn("smtputf8")


def header_problem(value: str) -> str | None:
    """Why `value` cannot be a mail header's text as it is, or None: a line break would start
    a header of the sender's choosing, and an encoded word (`=?utf-8?q?…?=`) is shown by mail
    programs, and read by Python's own email package, as the other text it encodes (a line
    break included)."""
    if "".join(value.splitlines()) != value:
        return "must be one line"
    if _ENCODED_WORD.search(value):
        return "must not contain MIME encoded words (=?charset?q?…?=)"
    return None


def address_problem(address: str) -> str | None:
    """Why mail could not be sent to `address` as it is written, or None. Every door that
    stores an address (sign-up, accounts, invites, whitelists) checks it here, through
    `users.normalize_email`: an address its mail cannot reach would be refused only at sending,
    and one holding an encoded word is read by mail programs as the other address it encodes."""
    problem = header_problem(address)
    if problem is not None:
        return problem
    try:
        _message("", _ascii_domain(address), Letter("", address, "", ""))
    except Unsendable:
        return "cannot be written in a mail header as this one address"
    return None


def _message(sender: str, recipient: str, letter: Letter | OutboxEmail) -> EmailMessage:
    """The message as sent; its headers say exactly the recipient and subject given."""
    for value in (recipient, letter.subject):
        problem = header_problem(value)
        if problem:
            raise Unsendable(f"a header {problem}")
    email = EmailMessage()
    email["From"] = sender
    # Mail the platform writes (RFC 3834): auto-responders do not answer it, so an address
    # that answers every message (or the sender's own mailbox) cannot start a loop.
    email["Auto-Submitted"] = "auto-generated"
    try:
        email["To"], email["Subject"] = recipient, letter.subject
        email.set_content(letter.body)
    except ValueError as exc:  # what no header or charset can write (a lone surrogate)
        raise Unsendable("the message cannot be written as mail") from exc
    if [address.addr_spec for address in email["To"].addresses] != [recipient]:
        raise Unsendable("the recipient's address does not read as one address")
    return email


def _ascii_domain(address: str) -> str:
    """`address` with its domain in ASCII (IDNA): a server without SMTPUTF8 then takes every
    address whose only non-ASCII part is its domain."""
    local, _, domain = address.rpartition("@")
    if domain.isascii():
        return address
    from email_validator import EmailNotValidError, validate_email

    try:
        checked = validate_email(address, check_deliverability=False)
    except EmailNotValidError as exc:
        raise Unsendable("the recipient's domain cannot be written in ASCII") from exc
    return f"{local}@{checked.ascii_domain}"
