"""Web sessions: sign-in with throttling, cookie ids stored hashed, idle and absolute expiry."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import select

from benchgen.core.context import Context, Principal
from benchgen.core.errors import Unauthenticated
from benchgen.core.ids import new_id
from benchgen.db.tables import User, WebSession
from benchgen.services import audit
from benchgen.services.accounts import attempts, links, users
from benchgen.services.accounts.tokens import hash_token

# Stamping last-seen on every page view would make each GET a write; a minute's slack on the
# idle timeout is harmless.
_SEEN_EVERY = timedelta(minutes=1)


@dataclass(frozen=True)
class NewSession:
    """A session just made: `secret` goes into the cookie and is never stored."""

    secret: str
    user: users.UserView


@dataclass(frozen=True)
class LiveSession:
    """A valid session as the web door sees it."""

    id: str
    principal: Principal
    user: users.UserView
    csrf_token: str


def sign_in(
    ctx: Context, email: str, password: str, address: str, user_agent: str = ""
) -> NewSession | None:
    """Check a password and open a session; None (and a counted failure) when it is wrong.

    Failures are counted, not raised, so the caller's transaction keeps the record of them.

    Raises:
        RateLimited: too many recent failures for this account or from this address.
    """
    account = users.lookup_email(email)
    _require_not_throttled(ctx, account, address)
    try:
        user = users.authenticate(ctx, account, password)
    except Unauthenticated:
        attempts.count_attempt(ctx, account, address)
        return None
    return open_session(ctx, user, address, user_agent)


def open_session(
    ctx: Context, user: users.UserView, address: str, user_agent: str = ""
) -> NewSession:
    """A fresh session for `user` (after sign-in, sign-up or a password reset).

    A new random id every time: a session id planted in a browser before sign-in is never
    promoted to a signed-in one.
    """
    secret = secrets.token_urlsafe(32)
    now = ctx.now()
    row = WebSession(
        id=new_id("ses"),
        user_id=user.id,
        token_hash=hash_token(secret),
        csrf_token=secrets.token_urlsafe(32),
        address=address[:64],
        user_agent=user_agent[:200],
        created_at=now,
        last_seen_at=now,
        expires_at=now + timedelta(hours=ctx.settings.session_max_hours),
    )
    ctx.session.add(row)
    ctx.session.flush()
    # A session opens only through the web door, by the person it is for (whom a filter finds),
    # however anonymous the page they came through.
    _record(ctx, audit.AuditAction.SESSION_START, row)
    return NewSession(secret, user)


def find_session(ctx: Context, secret: str) -> LiveSession | None:
    """The live session behind a cookie value, or None (unknown, revoked, expired, idle, or the
    account disabled). Never cached: a sign-out elsewhere counts on the very next request."""
    row = ctx.session.scalar(select(WebSession).where(WebSession.token_hash == hash_token(secret)))
    if row is None or not _is_live(ctx, row):
        return None
    user = ctx.session.get(User, row.user_id)
    if user is None or not user.is_active:
        return None
    return LiveSession(row.id, Principal.web(user.id, row.id), users.view(user), row.csrf_token)


def seen_is_due(ctx: Context, session_id: str) -> bool:
    """Whether the session's last-seen time is old enough to be worth a write."""
    row = ctx.session.get(WebSession, session_id)
    return row is not None and row.last_seen_at + _SEEN_EVERY <= ctx.now()


def record_seen(ctx: Context, session_id: str) -> None:
    """Stamp the session as used now (extends the idle timeout, never the absolute one)."""
    row = ctx.session.get(WebSession, session_id)
    if row is not None:
        row.last_seen_at = ctx.now()


def end_session(ctx: Context, secret: str) -> None:
    """Sign out the live session behind a cookie value; agent turns it started lose their
    credential at once (A4). Named by its secret, not its id: only whoever holds the cookie
    (the person it is for) can end it this way."""
    row = ctx.session.scalar(select(WebSession).where(WebSession.token_hash == hash_token(secret)))
    if row is None or not _is_live(ctx, row):
        return  # already over: nothing to end, nothing to record
    row.revoked_at = ctx.now()
    _record(ctx, audit.AuditAction.SESSION_END, row)


def _is_live(ctx: Context, row: WebSession) -> bool:
    now = ctx.now()
    idle = timedelta(minutes=ctx.settings.session_idle_minutes)
    return row.revoked_at is None and row.expires_at > now and row.last_seen_at + idle > now


def _require_not_throttled(ctx: Context, account: str, address: str) -> None:
    attempts.require_room(
        ctx,
        account,
        address,
        ctx.settings.signin_failures_per_account,
        tried="failed sign-ins",
        key_is="account",
    )


def _record(ctx: Context, action: audit.AuditAction, row: WebSession) -> None:
    """Audit a session's start or end under the web door, as the person it is for."""
    audit.record(links.as_person(ctx, row.user_id), action, "user", row.user_id, session=row.id)
