"""Changing a password, and resetting a forgotten one through a mailed single-use link."""

from __future__ import annotations

from sqlalchemy import select

from benchgen.core.context import Context
from benchgen.core.errors import NotFound, Unauthenticated
from benchgen.db.tables import User
from benchgen.services import audit
from benchgen.services.accounts import _mail_queue, _signouts, attempts, links, users
from benchgen.services.accounts.links import Purpose

RESET_PATH = "/password/reset/{token}"
# Reset mails one address may be sent per sign-in window, whoever asks: no mail-bombing.
RESETS_PER_WINDOW = 3


def change_password(ctx: Context, current: str, new: str, address: str = "") -> int | None:
    """Change the acting person's password; every other session and every running agent turn
    of theirs ends. Returns how many sessions ended, or None when `current` is wrong.

    A wrong current password is returned, not raised, so the caller's transaction keeps the
    failure: it counts with failed sign-ins, and a stolen session cannot guess its way to
    the password any faster than the sign-in form allows.

    Raises:
        PermissionDenied: not the person themself, signed in.
        Unauthenticated: the account is disabled or the session ended.
        InvalidInput: the new password is shorter than 8 or longer than 1024 characters.
        RateLimited: too many wrong passwords for this account or from this address.
    """
    user = users.require_own_account(ctx)
    # Throttled before hashing: a refused guess must cost the server no argon2 hash either.
    attempts.require_room(ctx, user.email, address, ctx.settings.signin_failures_per_account)
    password_hash = users.hash_password(ctx.settings, new)
    try:
        users.authenticate(ctx, user.email, current)
    except Unauthenticated:
        attempts.count_attempt(ctx, user.email, address)
        return None
    user.password_hash = password_hash
    ended = _signouts.end_sessions_of(ctx, user.id, keep=ctx.principal.session_id)
    links.retire_links(ctx, Purpose.RESET, user.email)
    audit.record(ctx, audit.AuditAction.PASSWORD_CHANGE, "user", user.id, sessions_ended=ended)
    return ended


def request_password_reset(ctx: Context, email: str, address: str) -> None:
    """Mail a reset link valid 30 minutes, when `email` is an active account's verified
    address. Whatever the case, the caller must answer the same: nothing here tells whether
    the account exists (the count below is kept for every request alike).

    Raises:
        InvalidInput: not an email address.
        RateLimited: three requests for this address in the window, or this client address
            has used its budget.
    """
    account = users.normalize_email(email)
    key = f"reset:{account}"
    attempts.require_room(ctx, key, address, RESETS_PER_WINDOW)
    attempts.count_attempt(ctx, key, address)
    user = ctx.session.scalar(select(User).where(User.email == account))
    if user is None or not user.is_active or user.email_verified_at is None:
        # Unverified: the address may not be the account holder's, and a reset link would
        # hand the account to whoever really owns that mailbox, or back to a squatter.
        return
    links.retire_links(ctx, Purpose.RESET, account)
    secret, _ = links.issue_link(ctx, Purpose.RESET, account, user.id)
    body = (
        "Someone, hopefully you, asked to reset the password of the BenchGen account for this "
        "email address.\n\nTo choose a new password, open this link within 30 minutes (it "
        f"works once):\n\n{links.link_text(ctx, RESET_PATH.format(token=secret))}\n\n"
        "Choosing a new password signs the account out everywhere. If you did not ask, ignore "
        "this message: your password stays as it is."
    )
    _mail_queue.record_mail(ctx, account, "Reset your BenchGen password", body)


def reset_is_live(ctx: Context, secret: str) -> bool:
    """Whether `secret` is a reset link that can still be used."""
    return links.live_link(ctx, Purpose.RESET, secret) is not None


def reset_password(ctx: Context, secret: str, new: str) -> users.UserView:
    """Set a new password through a reset link (anyone holding it), once. Every session and
    running agent turn of the account ends: whoever knew the old password is out.

    Raises:
        NotFound: the link is unknown, used, expired, or its account is disabled.
        InvalidInput: the new password is shorter than 8 or longer than 1024 characters.
    """
    link = links.live_link(ctx, Purpose.RESET, secret)
    user = ctx.session.get(User, link.user_id) if link and link.user_id else None
    if link is None or user is None or user.email != link.email or not user.is_active:
        raise NotFound(links.DEAD_LINK)
    user.password_hash = users.hash_password(ctx.settings, new)
    links.retire_links(ctx, Purpose.RESET, user.email)
    ended = _signouts.end_sessions_of(ctx, user.id)
    audit.record(
        links.as_person(ctx, user.id),
        audit.AuditAction.PASSWORD_RESET,
        "user",
        user.id,
        sessions_ended=ended,
    )
    return users.view(user)
