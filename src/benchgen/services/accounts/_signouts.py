"""Signing an account out everywhere, without permission checks: for the services that already
decided it must be (a password change or reset, disabling the account)."""

from __future__ import annotations

from sqlalchemy import update

from benchgen.core.context import Context
from benchgen.db.tables import ApiToken, WebSession


def end_sessions_of(
    ctx: Context, user_id: str, keep: str | None = None, *, personal_tokens: bool = False
) -> int:
    """Sign a user out everywhere (but session `keep`), and end their running agent turns:
    after a password change, a reset or deactivation; with `personal_tokens` (deactivation)
    revoke their API tokens too. Returns how many sessions ended."""
    now = ctx.now()
    sessions = update(WebSession).where(
        WebSession.user_id == user_id, WebSession.revoked_at.is_(None)
    )
    if keep is not None:
        sessions = sessions.where(WebSession.id != keep)
    ended = ctx.session.execute(sessions.values(revoked_at=now))
    # Turn credentials are revoked outright, whichever door started the turn: whoever held
    # the old password must not keep an agent working for them.
    tokens = update(ApiToken).where(ApiToken.user_id == user_id, ApiToken.revoked_at.is_(None))
    if not personal_tokens:
        tokens = tokens.where(ApiToken.kind == "agent")
    ctx.session.execute(tokens.values(revoked_at=now))
    return int(getattr(ended, "rowcount", 0) or 0)
