"""Inviting collaborators: the owner invites an address; its holder accepts by a mailed link."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import ColumnElement, func, select

from benchgen.core.context import Context
from benchgen.core.errors import Conflict, NotFound, PermissionDenied, RateLimited
from benchgen.core.ids import new_id
from benchgen.core.permissions import Action
from benchgen.db.tables import Benchmark, Collaborator, CollaboratorInvitation, User
from benchgen.services import access, audit
from benchgen.services.accounts import _mail_queue, links, signup, users
from benchgen.services.accounts.tokens import hash_token

LIFETIME = timedelta(days=7)
ACCEPT_PATH = "/invitations/{token}"
DAY = timedelta(days=1)
# Invitations are mail an owner makes the platform send, to addresses of their choosing: an
# owner may send this many a day in all, and, revoking and inviting again, at most the second
# number to one address on one benchmark.
PER_DAY = 20
PER_ADDRESS_PER_DAY = 3
SUBJECT = "An invitation to collaborate on BenchGen"


@dataclass(frozen=True)
class Refusals:
    """Why an invitation no longer works, said to whoever asked: its holder or the owner."""

    accepted: str
    revoked: str
    expired: str


HOLDER_REFUSALS = Refusals(
    "This invitation was accepted already; it works once.",
    "The owner revoked this invitation; ask them for a new one.",
    "This invitation expired on {at:%Y-%m-%d %H:%M} UTC; ask the owner for a new one.",
)
# The owner revoking a link that stopped working meanwhile (another tab, its holder accepting)
# is not told to ask the owner.
OWNER_REFUSALS = Refusals(
    "{email} accepted this invitation already: remove them as a collaborator instead.",
    "This invitation was revoked already.",
    "This invitation expired on {at:%Y-%m-%d %H:%M} UTC already: there is nothing to revoke.",
)


@dataclass(frozen=True)
class Invitation:
    """A pending invitation as the owner sees it (never its link)."""

    id: str
    email: str
    created_at: datetime
    expires_at: datetime


@dataclass(frozen=True)
class Offer:
    """What the invited person sees before accepting."""

    benchmark_id: str
    title: str
    owner: str
    email: str
    expires_at: datetime


def invite_collaborator(ctx: Context, benchmark_id: str, email: str) -> Invitation:
    """Record an invitation to collaborate and mail its link (owner, web app or CLI only).

    The outcome is the same whether or not an account has this address, so that inviting
    cannot be used to learn who has an account: the invitation is recorded and listed alike,
    and only its holder learns, by following the link, whether it can be accepted.

    Raises:
        NotFound / PermissionDenied: not the owner, or a token or the agent asked.
        InvalidInput: not an email address.
        Conflict: the owner's own address, a collaborator's, or one with a pending invitation.
        RateLimited: the owner sent `PER_DAY` invitations in the last 24 hours, or
            `PER_ADDRESS_PER_DAY` to this address on this benchmark.
    """
    benchmark = access.require_benchmark(ctx, benchmark_id, Action.ACCESS_MANAGE)
    address = users.normalize_email(email)
    # The owner's row lock serialises their invitations: two sent at once can neither both
    # pass the pending check below nor both slip under a limit.
    users.lock_user(ctx, benchmark.owner_id)
    _refuse_known(ctx, benchmark, address)
    _require_room(ctx, benchmark, address)
    secret = secrets.token_urlsafe(32)
    row = CollaboratorInvitation(
        id=new_id("inv"),
        benchmark_id=benchmark.id,
        email=address,
        invited_by=benchmark.owner_id,
        token_hash=hash_token(secret),
        created_at=ctx.now(),
        expires_at=ctx.now() + LIFETIME,
    )
    ctx.session.add(row)
    if _may_mail(ctx, address):
        _mail_queue.record_mail(ctx, address, SUBJECT, _letter(ctx, secret))
    audit.record(
        ctx,
        audit.AuditAction.COLLABORATOR_INVITE,
        "benchmark",
        benchmark.id,
        invitation_id=row.id,
        email=address,
    )
    return _view(row)


def _refuse_known(ctx: Context, benchmark: Benchmark, address: str) -> None:
    """Refuse what the owner knows already: their own address, a collaborator's (listed on the
    same page), an invitation still pending (a reloaded form would mail a second link)."""
    owner = ctx.session.get(User, benchmark.owner_id)
    if owner is not None and owner.email == address:
        raise Conflict("That is your own address: the owner has every right already.")
    collaborator = ctx.session.scalar(
        select(User.id)
        .join(Collaborator, Collaborator.user_id == User.id)
        .where(Collaborator.benchmark_id == benchmark.id, User.email == address)
    )
    if collaborator is not None:
        raise Conflict(f"{address} is already a collaborator.", {"email": address})
    pending = ctx.session.scalar(
        select(CollaboratorInvitation.expires_at).where(
            *_pending(ctx),
            CollaboratorInvitation.benchmark_id == benchmark.id,
            CollaboratorInvitation.email == address,
        )
    )
    if pending is not None:
        raise Conflict(
            f"{address} is invited already, until {pending:%Y-%m-%d %H:%M} UTC; revoke that "
            "invitation to send a new one.",
            {"email": address},
        )


def _require_room(ctx: Context, benchmark: Benchmark, address: str) -> None:
    """Refuse when the owner's invitations of the last 24 hours fill a limit."""
    mine = (
        CollaboratorInvitation.invited_by == benchmark.owner_id,
        CollaboratorInvitation.created_at > ctx.now() - DAY,
    )
    again = (
        CollaboratorInvitation.benchmark_id == benchmark.id,
        CollaboratorInvitation.email == address,
    )
    limits = (
        (PER_DAY, "invitations a day", mine),
        (PER_ADDRESS_PER_DAY, "invitations a day to one address on a benchmark", mine + again),
    )
    for limit, what, where in limits:
        count, oldest = ctx.session.execute(
            select(func.count(), func.min(CollaboratorInvitation.created_at)).where(*where)
        ).one()
        if count >= limit:
            retry_at = oldest + DAY
            raise RateLimited(
                f"An owner may send {limit} {what}; try again after "
                f"{retry_at:%Y-%m-%d %H:%M:%S} UTC.",
                retry_at,
                limit,
                "day",
            )


def _may_mail(ctx: Context, address: str) -> bool:
    """Whether the platform mails this address: only someone who could accept is written to
    (an active account holds it, or anyone may sign up with it). The answer never reaches the
    owner: the invitation is recorded and shown the same either way."""
    if signup.signup_mode(ctx) == "open":
        return True
    held = ctx.session.scalar(
        select(User.id).where(User.email == address, User.is_active.is_(True))
    )
    return held is not None


def _letter(ctx: Context, secret: str) -> str:
    # Nothing the owner typed (title, name) goes into the mail: it reaches addresses whose
    # holders never asked for it, and must not become a way to send them a message.
    return (
        "Someone who owns a benchmark on BenchGen invited this email address to collaborate "
        "on it: collaborators may edit its questions, run models on it and publish it.\n\n"
        f"To see the invitation and accept it, open this link within {LIFETIME.days} days:\n\n"
        f"{links.link_text(ctx, ACCEPT_PATH.format(token=secret))}\n\n"
        "You accept it signed in to a BenchGen account whose verified email is this address "
        "(or one you make with it, where sign-up is open). Nothing changes until you accept; "
        "if you did not expect this, ignore this message."
    )


def list_invitations(ctx: Context, benchmark_id: str) -> list[Invitation]:
    """The benchmark's pending invitations, by address (owner only).

    Raises:
        NotFound / PermissionDenied: as for any owner-only access action.
    """
    benchmark = access.require_benchmark(ctx, benchmark_id, Action.ACCESS_MANAGE)
    rows = ctx.session.scalars(
        select(CollaboratorInvitation)
        .where(*_pending(ctx), CollaboratorInvitation.benchmark_id == benchmark.id)
        .order_by(CollaboratorInvitation.email, CollaboratorInvitation.created_at)
    )
    return [_view(row) for row in rows]


def revoke_invitation(ctx: Context, benchmark_id: str, invitation_id: str) -> None:
    """Make a pending invitation's link useless (owner only).

    Raises:
        NotFound: no such invitation on this benchmark (or as for any owner-only action).
        Conflict: it was accepted, revoked or expired already.
    """
    benchmark = access.require_benchmark(ctx, benchmark_id, Action.ACCESS_MANAGE)
    row = ctx.session.get(CollaboratorInvitation, invitation_id, with_for_update=True)
    if row is None or row.benchmark_id != benchmark.id:
        raise NotFound("No such invitation.", {"invitation_id": invitation_id})
    _require_pending(ctx, row, OWNER_REFUSALS)
    row.revoked_at = ctx.now()
    audit.record(
        ctx,
        audit.AuditAction.COLLABORATOR_INVITE_REVOKE,
        "benchmark",
        benchmark.id,
        invitation_id=row.id,
        email=row.email,
    )


def show_invitation(ctx: Context, secret: str) -> Offer:
    """The invitation behind a mailed link, for the person it invites, signed in.

    Raises:
        PermissionDenied: a token, the agent or the operator asked, or the signed-in account
            is not one whose verified email is the invited address.
        NotFound: no such link, or its benchmark is gone.
        Conflict: the invitation was accepted, revoked or expired.
    """
    row, benchmark, _ = _held(ctx, secret)
    return _offer(ctx, row, benchmark)


def _offer(ctx: Context, row: CollaboratorInvitation, benchmark: Benchmark) -> Offer:
    owner = ctx.session.get(User, benchmark.owner_id)
    who = f"{owner.display_name} ({owner.email})" if owner is not None else "its owner"
    return Offer(benchmark.id, benchmark.title, who, row.email, row.expires_at)


def accept_invitation(ctx: Context, secret: str) -> Offer:
    """Become a collaborator through a mailed link, once (the invited person, signed in);
    returns what was accepted.

    Raises:
        As `show_invitation`; Conflict also when already a collaborator.
    """
    row, benchmark, user = _held(ctx, secret)
    if ctx.session.get(Collaborator, (benchmark.id, user.id)) is not None:
        raise Conflict("You are a collaborator on this benchmark already.")
    added = Collaborator(benchmark_id=benchmark.id, user_id=user.id, added_at=ctx.now())
    ctx.session.add(added)
    row.accepted_at, row.accepted_by = ctx.now(), user.id
    audit.record(
        ctx,
        audit.AuditAction.COLLABORATOR_ADD,
        "benchmark",
        benchmark.id,
        user_id=user.id,
        invitation_id=row.id,
    )
    return _offer(ctx, row, benchmark)


def _held(ctx: Context, secret: str) -> tuple[CollaboratorInvitation, Benchmark, User]:
    """The live invitation behind `secret`, its benchmark and the acting person it invites.
    The row stays locked until the transaction ends, so a link is accepted once."""
    user = users.require_own_account(ctx)
    row = None
    if secret and len(secret) <= 200:
        row = ctx.session.scalar(
            select(CollaboratorInvitation)
            .where(CollaboratorInvitation.token_hash == hash_token(secret))
            .with_for_update()
            .execution_options(populate_existing=True)
        )
    if row is None:
        raise NotFound("This invitation link is not valid: check that it was copied whole.")
    # Only the address's proven holder may accept: an unverified account may have been made
    # with someone else's address, and must not receive a collaborator's rights.
    if user.email != row.email:
        raise PermissionDenied(
            f"This invitation is for {row.email}, and you are signed in as {user.email}: sign "
            f"in with the account whose verified email is {row.email} to accept it."
        )
    if user.email_verified_at is None:
        raise PermissionDenied(
            f"Verify your email {user.email} first (follow the link mailed to it, or ask for a "
            "new one on your account page), then open this invitation again.",
            {"page": "/settings/account"},
        )
    _require_pending(ctx, row, HOLDER_REFUSALS)
    benchmark = ctx.session.get(Benchmark, row.benchmark_id)
    if benchmark is None or benchmark.deleted_at is not None:
        raise NotFound("The benchmark of this invitation was deleted.")
    return row, benchmark, user


def _require_pending(ctx: Context, row: CollaboratorInvitation, refusals: Refusals) -> None:
    """Refuse, saying which in the words of `refusals`, an invitation that was accepted, revoked
    or expired."""
    if row.accepted_at is not None:
        raise Conflict(refusals.accepted.format(email=row.email))
    if row.revoked_at is not None:
        raise Conflict(refusals.revoked)
    if row.expires_at <= ctx.now():
        raise Conflict(refusals.expired.format(at=row.expires_at))


def _pending(ctx: Context) -> tuple[ColumnElement[bool], ...]:
    return (
        CollaboratorInvitation.accepted_at.is_(None),
        CollaboratorInvitation.revoked_at.is_(None),
        CollaboratorInvitation.expires_at > ctx.now(),
    )


def _view(row: CollaboratorInvitation) -> Invitation:
    return Invitation(row.id, row.email, row.created_at, row.expires_at)
