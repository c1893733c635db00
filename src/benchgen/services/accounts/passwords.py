"""Changing a password, and resetting a forgotten one through a mailed single-use link."""

from __future__ import annotations

from sqlalchemy import delete, select

from benchgen.core.context import Context
from benchgen.core.errors import InvalidInput, NotFound, Unauthenticated
from benchgen.db.tables import NotificationSetting, User
from benchgen.services import audit
from benchgen.services.accounts import _mail_queue, _signouts, attempts, links, users
from benchgen.services.accounts.links import Purpose

RESET_PATH = "/password/reset/{token}"
# Live reset links one account holds at most. A new request adds a link rather than replacing
# the last: every request, a stranger's too, mails the owner's own mailbox, and retiring the
# older links let anyone kill the one the owner was about to use. Once the account holds this
# many, nothing more is mailed (the answer stays the same): no mail-bombing past this many
# links per 30 minutes, and no lock-out either, since the owner's mailbox holds working links.
LIVE_RESETS = 3


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
    """Mail a reset link valid 30 minutes, when `email` is an active account's address holding
    fewer than LIVE_RESETS live ones. Whatever the case, the caller must answer the same:
    nothing here tells whether the account exists. Earlier links keep working until one of
    them is used (or the password changes).

    An address never verified gets a link too, saying so: whoever made the account may not
    own the mailbox (open sign-up takes any address), and the mailbox's owner must be able
    to take it back (`reset_password`).

    Raises:
        InvalidInput: not an email address.
        RateLimited: this client address has used its budget.
    """
    account = _reset_address(ctx, email)
    key = f"reset:{account}"
    # Only the asker's own budget is refused. A budget per account refused the owner too, for
    # the whole window, once a stranger had used it; the cap on live links does its work.
    # The key's lock still makes two requests at once count the live links one after another.
    attempts.require_room(ctx, key, address, None)
    attempts.count_attempt(ctx, key, address)
    user = ctx.session.scalar(select(User).where(User.email == account))
    if user is None or not user.is_active:
        return
    if links.live_count(ctx, Purpose.RESET, account) >= LIVE_RESETS:
        return
    secret, _ = links.issue_link(ctx, Purpose.RESET, account, user.id)
    link = links.link_text(ctx, RESET_PATH.format(token=secret))
    _mail_queue.record_mail(ctx, account, "Reset your BenchGen password", _reset_letter(user, link))


def _reset_address(ctx: Context, email: str) -> str:
    """The address a reset is asked for, as accounts store it. One the address rules refuse
    today (a look-alike one, stored before those rules) still finds its account: its owner
    must not be locked out of a reset by a rule made after they signed up.

    Raises:
        InvalidInput: not an address, and no account's.
    """
    try:
        return users.normalize_email(email)
    except InvalidInput:
        stored = users.lookup_email(email)
        if ctx.session.scalar(select(User.id).where(User.email == stored)) is None:
            raise
        return stored


def _reset_letter(user: User, link: str) -> str:
    """The reset mail; for an address never verified it says what choosing a password does."""
    if user.email_verified_at is None:
        outcome = (
            "This address was never confirmed for that account. If you did not make it, "
            "choosing a password takes it over: it confirms the address as yours and signs "
            "out, everywhere, whoever made the account (their API tokens and run webhook stop "
            "working too)."
        )
    else:
        outcome = "Choosing a new password signs the account out everywhere."
    return (
        "Someone, hopefully you, asked to reset the password of the BenchGen account for this "
        "email address.\n\nTo choose a new password, open this link within 30 minutes (it "
        "works once; any other reset link sent here stops working when one is used):"
        f"\n\n{link}\n\n{outcome} If you did not ask, ignore this message: the password "
        "stays as it is."
    )


def reset_is_live(ctx: Context, secret: str) -> bool:
    """Whether `secret` is a reset link that can still be used."""
    return links.link_target(ctx, Purpose.RESET, secret) is not None


def reset_claims_address(ctx: Context, secret: str) -> bool:
    """Whether using this live reset link also takes the account over: its address was never
    verified, so whoever made the account may not be the mailbox's owner who holds the link."""
    target = links.link_target(ctx, Purpose.RESET, secret)
    return target is not None and target.email_verified_at is None


def reset_password(ctx: Context, secret: str, new: str) -> users.UserView:
    """Set a new password through a reset link (anyone holding it), once. Every session and
    running agent turn of the account ends: whoever knew the old password is out.

    An address never verified is verified by it (the link reached the mailbox), and the
    account's API tokens and run webhook are removed as well: whoever made the account may
    have taken an address that was not theirs, and must keep no way in or out of it.

    Raises:
        NotFound: the link is unknown, used, expired, or its account is disabled.
        InvalidInput: the new password is shorter than 8 or longer than 1024 characters.
    """
    user = links.link_target(ctx, Purpose.RESET, secret)
    if user is None:
        raise NotFound(links.DEAD_LINK)
    user.password_hash = users.hash_password(ctx.settings, new)
    claimed = user.email_verified_at is None
    as_owner = links.as_person(ctx, user.id)
    if claimed:
        _hand_over(ctx, user)
        audit.record(as_owner, audit.AuditAction.EMAIL_VERIFY, "user", user.id, email=user.email)
    links.retire_links(ctx, Purpose.RESET, user.email)
    ended = _signouts.end_sessions_of(ctx, user.id, personal_tokens=claimed)
    audit.record(
        as_owner,
        audit.AuditAction.PASSWORD_RESET,
        "user",
        user.id,
        sessions_ended=ended,
        claimed=claimed,
    )
    return users.view(user)


def _hand_over(ctx: Context, user: User) -> None:
    """Give an account whose address was never verified to the mailbox's owner: the address
    counts as verified, and the run webhook whoever made the account set is removed (left,
    it would post the new holder's run results to them)."""
    user.email_verified_at = ctx.now()
    links.retire_links(ctx, Purpose.VERIFY, user.email)
    ctx.session.execute(delete(NotificationSetting).where(NotificationSetting.user_id == user.id))
