"""The credit ledger's writes and sums, without permission checks: for the services that have
already required the action a job is paid for (launching, executing, cancelling a run).

Reservations hold the most a job can cost, so settling can only give credits back and a balance
never goes below zero.
"""

from __future__ import annotations

from sqlalchemy import func, select

from benchgen.core.context import Context
from benchgen.core.errors import Conflict, InsufficientCredits, NotFound, invalid
from benchgen.core.ids import new_id
from benchgen.db.tables import CreditEntry
from benchgen.services.accounts import users

# One ledger entry at most: the largest a 32-bit integer column holds (PostgreSQL refused more
# with a 500, where SQLite kept it). Balances are sums and may grow past it.
MAX_AMOUNT = 2**31 - 1


def balance_of(ctx: Context, user_id: str) -> int:
    """Sum of the user's ledger."""
    total = ctx.session.scalar(
        select(func.coalesce(func.sum(CreditEntry.amount), 0)).where(CreditEntry.user_id == user_id)
    )
    return int(total or 0)


def balances_of(ctx: Context, user_ids: list[str]) -> dict[str, int]:
    """Sums of several users' ledgers in one query; a user with no entries has 0."""
    if not user_ids:
        return {}
    rows = ctx.session.execute(
        select(CreditEntry.user_id, func.sum(CreditEntry.amount))
        .where(CreditEntry.user_id.in_(user_ids))
        .group_by(CreditEntry.user_id)
    )
    found = {user_id: int(total or 0) for user_id, total in rows}
    return {user_id: found.get(user_id, 0) for user_id in user_ids}


def reserve_credits(ctx: Context, amount: int, reference: str) -> str:
    """Hold `amount` of the acting user's credits for a job; returns the reservation id.

    Called by the run and training services after they have required the launching action,
    inside the same unit of work as the job it pays for.

    Raises:
        InsufficientCredits: the balance cannot cover `amount`; nothing is written.
        Conflict: a balance that covers it, but more than MAX_AMOUNT held at once.
        InvalidInput: negative amount.
    """
    if amount < 0:
        raise invalid(["amount"], "must not be negative")
    user_id = acting_user_id(ctx)
    users.lock_user(ctx, user_id)
    available = balance_of(ctx, user_id)
    # The balance first: a run too dear for the user is a 402 that says how much is missing,
    # not a refusal at an `amount` field their request never had.
    if amount > available:
        raise InsufficientCredits(amount, available)
    if amount > MAX_AMOUNT:
        raise Conflict(
            f"At most {MAX_AMOUNT:,} credits can be held for one job, and this one would cost "
            f"{amount:,}: ask for fewer questions or samples."
        )
    return append_entry(ctx, user_id, "reserve", -amount, reference=reference).id


def settle_credits(ctx: Context, reservation_id: str, actual_cost: int) -> int:
    """Close a reservation at the real cost (capped at what was reserved); returns credits freed.

    Raises:
        NotFound: no such reservation.
        Conflict: it was already settled or refunded.
    """
    reservation = _open_reservation(ctx, reservation_id)
    held = -reservation.amount
    cost = min(max(actual_cost, 0), held)
    append_entry(
        ctx, reservation.user_id, "settle", held - cost, reservation.id, reservation.reference
    )
    return held - cost


def refund_credits(ctx: Context, reservation_id: str, reason: str) -> int:
    """Give a whole reservation back (the job failed through the platform's fault).

    Raises:
        NotFound: no such reservation.
        Conflict: it was already settled or refunded.
    """
    reservation = _open_reservation(ctx, reservation_id)
    held = -reservation.amount
    append_entry(
        ctx, reservation.user_id, "refund", held, reservation.id, reservation.reference, reason
    )
    return held


def _open_reservation(ctx: Context, reservation_id: str) -> CreditEntry:
    reservation = ctx.session.get(CreditEntry, reservation_id)
    if reservation is None or reservation.kind != "reserve":
        raise NotFound("No such credit reservation.", {"id": reservation_id})
    users.lock_user(ctx, reservation.user_id)
    closed = ctx.session.scalar(
        select(CreditEntry.id).where(CreditEntry.reservation_id == reservation_id)
    )
    if closed is not None:
        raise Conflict("This reservation is already closed.", {"id": reservation_id})
    return reservation


def append_entry(
    ctx: Context,
    user_id: str,
    kind: str,
    amount: int,
    reservation_id: str | None = None,
    reference: str = "",
    note: str = "",
) -> CreditEntry:
    entry = CreditEntry(
        id=new_id("cr"),
        user_id=user_id,
        kind=kind,
        amount=amount,
        reservation_id=reservation_id,
        reference=reference,
        note=note[:500],
        door=ctx.principal.door,
        created_at=ctx.now(),
    )
    ctx.session.add(entry)
    ctx.session.flush()
    return entry


def acting_user_id(ctx: Context) -> str:
    if ctx.principal.user_id is None:
        raise invalid(["user"], "credits belong to a user; act --as one")
    return ctx.principal.user_id
