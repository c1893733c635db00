"""Who else is on a benchmark: collaborators, the join whitelist, participants."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select

from benchgen.core.context import Context
from benchgen.core.errors import Conflict, NotFound, PermissionDenied, invalid
from benchgen.core.ids import new_id
from benchgen.core.permissions import SESSION_KINDS, Action
from benchgen.core.text import require_line
from benchgen.db.tables import Benchmark, Collaborator, Participant, User, WhitelistEntry
from benchgen.services import access, audit
from benchgen.services.accounts import users

PARTICIPANT_STATUSES = ("active", "removed")


@dataclass(frozen=True)
class Member:
    """A collaborator or participant as the owner sees them."""

    user_id: str
    email: str
    display_name: str
    status: str
    since: datetime


def remove_collaborator(ctx: Context, benchmark_id: str, user_id: str) -> None:
    """Take a collaborator's rights away at once (owner, web app or CLI only).

    Raises:
        NotFound: benchmark or collaborator not found.
        PermissionDenied: not the owner, or a token or the agent asked.
    """
    # Held: a run the collaborator starts at this moment starts before the removal, or not.
    benchmark = access.require_held(ctx, benchmark_id, Action.ACCESS_MANAGE, exclusive=True)
    row = ctx.session.get(Collaborator, (benchmark.id, user_id))
    if row is None:
        raise NotFound("No such collaborator.", {"user_id": user_id})
    ctx.session.delete(row)
    audit.record(
        ctx, audit.AuditAction.COLLABORATOR_REMOVE, "benchmark", benchmark.id, user_id=user_id
    )


def list_collaborators(ctx: Context, benchmark_id: str) -> list[Member]:
    """The benchmark's collaborators (owner only).

    Raises:
        NotFound / PermissionDenied: as for any owner-only access action.
    """
    benchmark = access.require_benchmark(ctx, benchmark_id, Action.ACCESS_MANAGE)
    rows = ctx.session.execute(
        select(User, Collaborator.added_at)
        .join(Collaborator, Collaborator.user_id == User.id)
        .where(Collaborator.benchmark_id == benchmark.id)
        .order_by(User.email)
    )
    return [Member(u.id, u.email, u.display_name, "active", added) for u, added in rows]


def add_whitelist_entries(ctx: Context, benchmark_id: str, entries: list[str]) -> list[str]:
    """Admit exact emails and whole `@domain`s as possible participants (owner only).

    Raises:
        NotFound / PermissionDenied: as for any owner-only access action.
        InvalidInput: an entry that is neither an email nor `@domain`; nothing is added then.
    """
    benchmark = access.require_benchmark(ctx, benchmark_id, Action.ACCESS_MANAGE)
    cleaned = [_whitelist_entry(raw, index) for index, raw in enumerate(entries)]
    existing = set(
        ctx.session.scalars(
            select(WhitelistEntry.entry).where(WhitelistEntry.benchmark_id == benchmark.id)
        )
    )
    added = [entry for entry in dict.fromkeys(cleaned) if entry not in existing]
    ctx.session.add_all(
        WhitelistEntry(id=new_id("wl"), benchmark_id=benchmark.id, entry=entry, added_at=ctx.now())
        for entry in added
    )
    audit.record(ctx, audit.AuditAction.WHITELIST_ADD, "benchmark", benchmark.id, entries=added)
    return added


def remove_whitelist_entry(ctx: Context, benchmark_id: str, entry: str) -> None:
    """Stop admitting an email or domain; those who joined already stay (owner only).

    Raises:
        NotFound: no such entry.
    """
    benchmark = access.require_benchmark(ctx, benchmark_id, Action.ACCESS_MANAGE)
    row = ctx.session.scalar(
        select(WhitelistEntry)
        .where(
            WhitelistEntry.benchmark_id == benchmark.id,
            WhitelistEntry.entry == entry.strip().lower(),
        )
        # Locked: two removals at once both found the entry, and both were audited.
        .with_for_update()
    )
    if row is None:
        raise NotFound("No such whitelist entry.", {"entry": entry})
    ctx.session.delete(row)
    audit.record(
        ctx, audit.AuditAction.WHITELIST_REMOVE, "benchmark", benchmark.id, entry=row.entry
    )


def list_whitelist(ctx: Context, benchmark_id: str) -> list[str]:
    """The whitelist entries, sorted (owner only)."""
    benchmark = access.require_benchmark(ctx, benchmark_id, Action.ACCESS_MANAGE)
    return sorted(
        ctx.session.scalars(
            select(WhitelistEntry.entry).where(WhitelistEntry.benchmark_id == benchmark.id)
        )
    )


# What a participant agrees to; joining without accepting it is refused, whichever door asks.
TERMS = (
    "By joining you become a participant: the owner sees your name and email address, may "
    "email you about this benchmark, and may remove you. You see the questions, never the "
    "answer key, and your runs count against the benchmark's daily limit for people outside "
    "its team."
)


def join_benchmark(ctx: Context, benchmark_id: str, accept_terms: bool) -> Member:
    """Join as a participant, accepting `TERMS`: allowed when the whitelist admits you, or the
    benchmark is published.

    Raises:
        InvalidInput: the terms were not accepted.
        NotFound: the benchmark is private and the whitelist does not admit you.
        PermissionDenied: a token or the agent asked (joining is done in the web app).
        Conflict: already a participant, or removed by the owner.
    """
    try:
        benchmark = access.require_benchmark(ctx, benchmark_id, Action.BENCHMARK_JOIN)
    except (NotFound, PermissionDenied):
        # On a private benchmark a participant is no longer an invitee (and a removed one has
        # no role at all), so the check above refuses them; say why instead.
        _refuse_rejoin(ctx, benchmark_id)
        raise
    if not accept_terms:
        raise invalid(["accept_terms"], "accept the terms to join")
    user = access.live_user(ctx)
    assert user is not None  # require() above only allows a live user
    _refuse_rejoin(ctx, benchmark.id)
    row = Participant(
        benchmark_id=benchmark.id, user_id=user.id, status="active", joined_at=ctx.now()
    )
    ctx.session.add(row)
    audit.record(ctx, audit.AuditAction.PARTICIPANT_JOIN, "benchmark", benchmark.id)
    return Member(user.id, user.email, user.display_name, row.status, row.joined_at)


def _refuse_rejoin(ctx: Context, benchmark_id: str) -> None:
    """Raise Conflict when the acting person already joined this live benchmark.

    Only the doors that may join at all get this answer, and only someone who joined (and so
    already knows the benchmark exists) gets it: it reveals nothing a refusal would hide.
    """
    user_id = ctx.principal.user_id
    if ctx.principal.kind not in SESSION_KINDS or user_id is None:
        return
    benchmark = ctx.session.get(Benchmark, benchmark_id)
    if benchmark is None or benchmark.deleted_at is not None:
        return
    existing = ctx.session.get(Participant, (benchmark_id, user_id))
    if existing is None:
        return
    if existing.status == "removed":
        raise Conflict(f"{access.REMOVED.capitalize()}.")
    raise Conflict("You are already a participant.")


def removal_note(ctx: Context, benchmark_id: str) -> str | None:
    """Why the acting person, who may read this benchmark, may not run on it, submit to it or
    join it: the owner removed them as a participant (None when that is not so, or another
    role lets them run). For pages, to say so instead of offering forms that would be refused."""
    benchmark = ctx.session.get(Benchmark, benchmark_id)
    if benchmark is None:
        return None
    decision = access.explain(ctx, Action.RUN_LAUNCH, benchmark)
    if decision.allowed or decision.reason != access.REMOVED:
        return None
    return f"You may not run models, submit or join here: {access.REMOVED}."


def set_participant_status(ctx: Context, benchmark_id: str, user_id: str, status: str) -> None:
    """Remove a participant or let them back (owner only).

    Raises:
        NotFound: not a participant.
        InvalidInput: unknown status.
    """
    benchmark = access.require_held(ctx, benchmark_id, Action.ACCESS_MANAGE, exclusive=True)
    if status not in PARTICIPANT_STATUSES:
        raise invalid(["status"], f"must be one of {', '.join(PARTICIPANT_STATUSES)}")
    row = ctx.session.get(Participant, (benchmark.id, user_id))
    if row is None:
        raise NotFound("No such participant.", {"user_id": user_id})
    row.status = status
    audit.record(
        ctx,
        audit.AuditAction.PARTICIPANT_STATUS,
        "benchmark",
        benchmark.id,
        user_id=user_id,
        status=status,
    )


def list_participants(
    ctx: Context, benchmark_id: str, statuses: tuple[str, ...] = PARTICIPANT_STATUSES
) -> list[Member]:
    """Participants with one of `statuses` (owner only)."""
    benchmark = access.require_benchmark(ctx, benchmark_id, Action.ACCESS_MANAGE)
    return participants_with(ctx, benchmark.id, statuses)


def participants_with(ctx: Context, benchmark_id: str, statuses: tuple[str, ...]) -> list[Member]:
    """Participants of a benchmark the caller already has access to, filtered by status."""
    rows = ctx.session.execute(
        select(User, Participant.status, Participant.joined_at)
        .join(Participant, Participant.user_id == User.id)
        .where(Participant.benchmark_id == benchmark_id, Participant.status.in_(statuses))
        .order_by(User.email)
    )
    return [Member(u.id, u.email, u.display_name, status, since) for u, status, since in rows]


def _whitelist_entry(raw: str, index: int) -> str:
    # Emails are checked by email-validator, which refuses these characters too; a bare
    # @domain entry is not, and an invisible or bidi character would make it read as another.
    text = require_line(raw, ["entries", index]).lower()
    if text.startswith("@"):
        domain = text[1:]
        if not domain or "." not in domain or "@" in domain or " " in domain:
            raise invalid(["entries", index], f"{raw!r} is not a valid @domain entry")
        return text
    try:
        return users.normalize_email(text)
    except Exception:
        raise invalid(["entries", index], f"{raw!r} is neither an email nor an @domain") from None
