"""Making one's own account: the deployment's sign-up mode, and admins' invites."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, select

from benchgen.core.context import Context
from benchgen.core.errors import Conflict, PermissionDenied
from benchgen.core.permissions import Action
from benchgen.db.tables import AccountLink, User
from benchgen.services import access, audit, overrides
from benchgen.services.accounts import _mail_queue, attempts, links, users
from benchgen.services.accounts.links import Purpose

SIGNUP_PATH = "/signup?invite={token}"
# Sign-ups one client address may make per window, beside its shared budget (attempts.py).
SIGNUPS_PER_WINDOW = 5
TAKEN = "An account with this email already exists: sign in, or reset its password."
MAX_INVITES = 200


@dataclass(frozen=True)
class InviteView:
    """An invite as admins see it (never its link after creation)."""

    id: str
    email: str
    created_at: datetime
    expires_at: datetime
    used_at: datetime | None

    def status_at(self, now: datetime) -> str:
        """`used`, `expired` or `open`."""
        if self.used_at is not None:
            return "used"
        return "expired" if self.expires_at <= now else "open"


@dataclass(frozen=True)
class NewInvite:
    """An invite just made: `link` is what was mailed, shown once to the admin who made it (so
    a deployment without SMTP can still hand it over)."""

    link: str
    invite: InviteView


def signup_mode(ctx: Context) -> str:
    """Who may make an account now: `open`, `invite` or `closed` (an admin may change it)."""
    return str(overrides.effective(ctx, "signup_mode"))


def sign_up(
    ctx: Context,
    email: str,
    password: str,
    display_name: str = "",
    invite: str = "",
    address: str = "",
) -> users.UserView | None:
    """Make an account for oneself, as the deployment's sign-up mode allows; None when the
    email is taken (say `TAKEN`).

    `open`: anyone; the email stays unverified until its mailed link is followed. `invite`:
    only with an admin's unused invite, for the address it was sent to (verified: the invite
    reached it). `closed`: nobody. An invite is honoured in `open` mode too.

    Raises:
        PermissionDenied: sign-up is closed, needs an invite, or the invite is not valid.
        InvalidInput: bad email, password or display name.
        RateLimited: too many sign-ups (taken emails included) from this client address.
    """
    mode = signup_mode(ctx)
    if mode == "closed":
        raise PermissionDenied("Sign-up is closed here; ask an administrator for an account.")
    held = links.live_link(ctx, Purpose.INVITE, invite) if invite else None
    if invite and held is None:
        raise PermissionDenied(f"{links.DEAD_LINK} Ask the administrator for a new invite.")
    if held is None and mode != "open":
        raise PermissionDenied("Sign-up needs an invite from an administrator.")
    key = f"signup:{attempts.client_of(address)}"
    attempts.require_room(ctx, key, address, SIGNUPS_PER_WINDOW)
    chosen = held.email if held is not None else email
    attempts.count_attempt(ctx, key, address)
    try:
        user = users.insert_user(ctx, chosen, password, display_name, verified=held is not None)
    except Conflict:
        # Returned, not raised, so the caller's transaction keeps the attempt: each address
        # tried costs the prober one sign-up of the window, as a failed sign-in does.
        return None
    if held is not None:
        links.retire_links(ctx, Purpose.INVITE, held.email)
    else:
        links.mail_verification(ctx, user)
    audit.record(
        links.as_person(ctx, user.id),
        audit.AuditAction.USER_SIGNUP,
        "user",
        user.id,
        email=user.email,
        invited=held is not None,
    )
    return users.view(user)


def invite_email(ctx: Context, secret: str) -> str | None:
    """The address a still-valid invite was sent to (for whoever holds it), else None."""
    held = links.live_link(ctx, Purpose.INVITE, secret)
    return held.email if held is not None else None


def create_invite(ctx: Context, email: str) -> NewInvite:
    """Mail someone a link to make their account (admins and the operator).

    Raises:
        PermissionDenied: not an admin.
        InvalidInput: not an email address.
        Conflict: sign-up is closed (an invite could not be used), the address has an account,
            or an invite to it is still open (a reloaded form would mail a second link).
    """
    access.require(ctx, Action.ADMIN_USERS)
    address = users.normalize_email(email)
    if signup_mode(ctx) == "closed":
        raise Conflict("Sign-up is closed, so an invite could not be used: set it to invite first.")
    if ctx.session.scalar(select(User.id).where(User.email == address)) is not None:
        raise Conflict(f"{address} already has an account.", {"email": address})
    open_until = ctx.session.scalar(
        select(func.max(AccountLink.expires_at)).where(
            AccountLink.purpose == Purpose.INVITE.value,
            AccountLink.email == address,
            AccountLink.used_at.is_(None),
            AccountLink.expires_at > ctx.now(),
        )
    )
    if open_until is not None:
        raise Conflict(
            f"{address} was already invited; that link works until {open_until:%Y-%m-%d %H:%M} "
            "UTC.",
            {"email": address},
        )
    secret, row = links.issue_link(ctx, Purpose.INVITE, address)
    link = links.link_text(ctx, SIGNUP_PATH.format(token=secret))
    body = (
        "You are invited to make an account on BenchGen, the benchmark platform.\n\n"
        f"Open this link within 7 days to choose your password:\n\n{link}\n\n"
        "If you did not expect this, ignore this message."
    )
    _mail_queue.record_mail(ctx, address, "Your invitation to BenchGen", body)
    audit.record(ctx, audit.AuditAction.INVITE_CREATE, "invite", row.id, email=address)
    return NewInvite(invite_link(ctx, secret), _view(row))


def invite_link(ctx: Context, secret: str) -> str:
    """The sign-up address an invite's secret opens."""
    return ctx.settings.link(SIGNUP_PATH.format(token=secret))


def list_invites(ctx: Context, limit: int = 100) -> list[InviteView]:
    """Invites, newest first (admins and the operator).

    Raises:
        PermissionDenied: not an admin.
    """
    access.require(ctx, Action.ADMIN_USERS)
    rows = ctx.session.scalars(
        select(AccountLink)
        .where(AccountLink.purpose == Purpose.INVITE.value)
        .order_by(AccountLink.created_at.desc(), AccountLink.id)
        .limit(max(1, min(limit, MAX_INVITES)))
    )
    return [_view(row) for row in rows]


def _view(row: AccountLink) -> InviteView:
    return InviteView(row.id, row.email, row.created_at, row.expires_at, row.used_at)
