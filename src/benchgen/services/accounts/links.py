"""Emailed single-use links (verify an email, reset a password, join by invite), stored hashed."""

from __future__ import annotations

import secrets
from datetime import timedelta
from enum import StrEnum

from sqlalchemy import func, select, update

from benchgen.core.context import Context, Principal
from benchgen.core.errors import Conflict, NotFound, PermissionDenied, RateLimited
from benchgen.core.ids import new_id
from benchgen.core.permissions import SESSION_KINDS
from benchgen.db.tables import AccountLink, AuditEvent, User
from benchgen.services import audit
from benchgen.services.accounts import _mail_queue, users
from benchgen.services.accounts.tokens import hash_token


class Purpose(StrEnum):
    """What a link does when followed."""

    VERIFY = "verify"
    RESET = "reset"
    INVITE = "invite"


LIFETIMES = {
    Purpose.VERIFY: timedelta(hours=48),
    # Short: a reset link sitting in a mailbox is a way into the account.
    Purpose.RESET: timedelta(minutes=30),
    Purpose.INVITE: timedelta(days=7),
}
VERIFY_PATH = "/account/verify/{token}"
FORGOT_PATH = "/password/forgot"
VERIFICATIONS_PER_HOUR = 3
DEAD_LINK = "This link is not valid: it was already used, it expired, or it was mistyped."
NOT_YOURS = (
    "Sign in to the account this link was sent for to confirm its email. Did someone else make "
    "an account with your address? Ask for a password reset for it to take the account over."
)


def issue_link(
    ctx: Context, purpose: Purpose, email: str, user_id: str | None = None
) -> tuple[str, AccountLink]:
    """A new link: its secret (for the mail only: the database keeps its SHA-256) and row."""
    secret = secrets.token_urlsafe(32)
    row = AccountLink(
        id=new_id("lnk"),
        purpose=purpose.value,
        user_id=user_id,
        email=email,
        token_hash=hash_token(secret),
        created_at=ctx.now(),
        expires_at=ctx.now() + LIFETIMES[purpose],
    )
    ctx.session.add(row)
    return secret, row


def live_link(ctx: Context, purpose: Purpose, secret: str) -> AccountLink | None:
    """The unused, unexpired link of this purpose behind `secret`, or None. Its row stays
    locked until the caller's transaction ends, so a link is used once even when it is sent
    several times at once (on PostgreSQL, eight at once all reset the password)."""
    if not secret or len(secret) > 200:
        return None
    row = ctx.session.scalar(
        select(AccountLink)
        .where(AccountLink.token_hash == hash_token(secret))
        .with_for_update()
        .execution_options(populate_existing=True)
    )
    if row is None or row.purpose != purpose.value or row.used_at is not None:
        return None
    return row if row.expires_at > ctx.now() else None


def retire_links(ctx: Context, purpose: Purpose, email: str) -> None:
    """Make every unused link of this purpose for `email` unusable (a newer one replaces them,
    or what they were for is done)."""
    ctx.session.execute(
        update(AccountLink)
        .where(
            AccountLink.purpose == purpose.value,
            AccountLink.email == email,
            AccountLink.used_at.is_(None),
        )
        .values(used_at=ctx.now())
    )


def live_count(ctx: Context, purpose: Purpose, email: str) -> int:
    """How many unused, unexpired links of this purpose `email` holds."""
    return (
        ctx.session.scalar(
            select(func.count()).where(
                AccountLink.purpose == purpose.value,
                AccountLink.email == email,
                AccountLink.used_at.is_(None),
                AccountLink.expires_at > ctx.now(),
            )
        )
        or 0
    )


def withdraw_invites_of(ctx: Context, user_id: str) -> None:
    """End the open invites `user_id` made (they were disabled, or are no admin any more):
    whoever they invited comes in on their word, which no longer counts. The audit log names
    who made each invite, in the invite's own transaction, so every invite ever made is found.
    They show as expired, and another admin may invite the address again."""
    made = select(AuditEvent.object_id).where(
        AuditEvent.action == audit.AuditAction.INVITE_CREATE,
        AuditEvent.user_id == user_id,
    )
    ctx.session.execute(
        update(AccountLink)
        .where(
            AccountLink.id.in_(made),
            AccountLink.purpose == Purpose.INVITE.value,
            AccountLink.used_at.is_(None),
            AccountLink.expires_at > ctx.now(),
        )
        .values(expires_at=ctx.now())
    )


def link_target(ctx: Context, purpose: Purpose, secret: str) -> User | None:
    """The active account a live link of `purpose` is for, while its address is the link's."""
    link = live_link(ctx, purpose, secret)
    user = ctx.session.get(User, link.user_id) if link and link.user_id else None
    if link is None or user is None or user.email != link.email or not user.is_active:
        return None
    return user


def link_text(ctx: Context, path: str) -> str:
    """A link for a mail, absolute only from `BENCHGEN_PUBLIC_URL`: never from a request's Host
    header, which whoever asks for the mail controls (a reset link would point at their site)."""
    if ctx.settings.public_url:
        return ctx.settings.link(path)
    return (
        f"{path}\n\n(Open this path on the BenchGen site you use. The operator can make it a "
        "full link by setting BENCHGEN_PUBLIC_URL.)"
    )


def as_person(ctx: Context, user_id: str) -> Context:
    """The same unit of work acting as the person a link identified, so the audit log names
    them (door web) rather than the anonymous page they came through."""
    return Context(ctx.session, Principal.web(user_id), ctx.settings, ctx.clock)


def send_verification(ctx: Context) -> str:
    """Mail the acting person a new link to verify their email; returns the address.

    Raises:
        PermissionDenied: not the person themself, signed in.
        Unauthenticated: the account is disabled or the session ended.
        Conflict: the email is verified already.
        RateLimited: three links were sent in the last hour.
    """
    user = users.require_own_account(ctx)
    if user.email_verified_at is not None:
        raise Conflict("Your email is verified already.")
    hour = timedelta(hours=1)
    count, oldest = ctx.session.execute(
        select(func.count(), func.min(AccountLink.created_at))
        .where(
            AccountLink.purpose == Purpose.VERIFY.value,
            AccountLink.user_id == user.id,
            AccountLink.created_at > ctx.now() - hour,
        )
        .order_by(None)
    ).one()
    if count >= VERIFICATIONS_PER_HOUR:
        raise RateLimited(
            "Three links were sent in the last hour; use one of them or try again later.",
            oldest + hour,
            VERIFICATIONS_PER_HOUR,
            "hour",
        )
    mail_verification(ctx, user)
    return user.email


def mail_verification(ctx: Context, user: User) -> None:
    """Queue a verification link for `user`'s email (earlier unused ones stop working).

    The mail carries nothing the person typed (not even their display name): sign-up mails
    addresses its author does not control, and must not become a way to send them a message.
    """
    retire_links(ctx, Purpose.VERIFY, user.email)
    secret, _ = issue_link(ctx, Purpose.VERIFY, user.email, user.id)
    # Not `link_text`: its note on paths is in the mail already, under the first link.
    forgot = ctx.settings.link(FORGOT_PATH)
    body = (
        "Someone, hopefully you, made a BenchGen account with this email address.\n\n"
        "To confirm the address is yours, open this link within 48 hours, signed in to that "
        "account:\n\n"
        f"{link_text(ctx, VERIFY_PATH.format(token=secret))}\n\n"
        "Until then, benchmark whitelists and collaborator invitations do not count this "
        "address. If you did not sign up, ignore this message, or take the account over by "
        f"asking for a password reset for this address at {forgot}"
    )
    _mail_queue.record_mail(ctx, user.email, "Confirm your email for BenchGen", body)


def verification_is_live(ctx: Context, secret: str) -> bool:
    """Whether `secret` is a verification link that can still be used."""
    return link_target(ctx, Purpose.VERIFY, secret) is not None


def verification_is_mine(ctx: Context, secret: str) -> bool:
    """Whether `secret` is a live verification link for the acting person's own account, as
    `verify_email` needs it."""
    user = link_target(ctx, Purpose.VERIFY, secret)
    return user is not None and _is_own(ctx, user)


def verify_email(ctx: Context, secret: str) -> users.UserView:
    """Follow a verification link, signed in to the account it was mailed for: the account's
    email counts from now on.

    The link alone is not enough. It proves the mailbox, not the account: whoever signed up
    with someone else's address had that mailbox's owner sent the link, and one click of
    theirs on "confirm" made the stranger's account count as theirs in every whitelist.

    Raises:
        NotFound: the link is unknown, used, expired, or the account's email changed since.
        PermissionDenied: not signed in to the account the link was mailed for.
    """
    user = link_target(ctx, Purpose.VERIFY, secret)
    if user is None:
        raise NotFound(DEAD_LINK)
    if not _is_own(ctx, user):
        raise PermissionDenied(NOT_YOURS)
    retire_links(ctx, Purpose.VERIFY, user.email)
    if user.email_verified_at is None:
        user.email_verified_at = ctx.now()
        audit.record(
            as_person(ctx, user.id),
            audit.AuditAction.EMAIL_VERIFY,
            "user",
            user.id,
            email=user.email,
        )
    return users.view(user)


def _is_own(ctx: Context, user: User) -> bool:
    return ctx.principal.kind in SESSION_KINDS and ctx.principal.user_id == user.id
