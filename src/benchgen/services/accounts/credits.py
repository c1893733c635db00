"""Credits: an append-only integer ledger (grant, reserve, settle, refund); balance is its sum.

A reservation holds the most a job can cost, so settling can only give credits back and a balance
never goes below zero.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, select

from benchgen.core.context import Context
from benchgen.core.errors import Conflict, InsufficientCredits, NotFound, invalid
from benchgen.core.ids import new_id
from benchgen.core.permissions import Action
from benchgen.db.tables import CreditEntry
from benchgen.services import access, audit
from benchgen.services.accounts import users
from benchgen.services.specs import MAX_LIST, check_window

MAX_AMOUNT = 10**12


@dataclass(frozen=True)
class LedgerLine:
    """One ledger row as the edges show it."""

    id: str
    kind: str
    amount: int
    reference: str
    note: str
    door: str
    created_at: datetime


def balance_of(ctx: Context, user_id: str) -> int:
    """Sum of the user's ledger."""
    total = ctx.session.scalar(
        select(func.coalesce(func.sum(CreditEntry.amount), 0)).where(CreditEntry.user_id == user_id)
    )
    return int(total or 0)


def get_balance(ctx: Context) -> int:
    """The acting user's balance.

    Raises:
        PermissionDenied: the principal may not read credits.
    """
    access.require(ctx, Action.CREDITS_READ)
    return balance_of(ctx, _acting_user_id(ctx))


def list_ledger(ctx: Context, limit: int = 50, before: str | None = None) -> list[LedgerLine]:
    """The acting user's ledger, newest first; `before` is the id of the last line already seen.

    Raises:
        PermissionDenied: the principal may not read credits.
        InvalidInput: limit outside 1..MAX_LIST, or an unknown cursor.
    """
    access.require(ctx, Action.CREDITS_READ)
    check_window(limit, 0, MAX_LIST)
    query = select(CreditEntry).where(CreditEntry.user_id == _acting_user_id(ctx))
    if before is not None:
        anchor = ctx.session.get(CreditEntry, before)
        if anchor is None or anchor.user_id != ctx.principal.user_id:
            raise invalid(["before"], "unknown cursor")
        query = query.where(
            (CreditEntry.created_at < anchor.created_at)
            | ((CreditEntry.created_at == anchor.created_at) & (CreditEntry.id < anchor.id))
        )
    query = query.order_by(CreditEntry.created_at.desc(), CreditEntry.id.desc()).limit(limit)
    return [_line(row) for row in ctx.session.scalars(query)]


def grant_credits(ctx: Context, user_id: str, amount: int, note: str = "") -> int:
    """Add credits to an account (admin or operator); returns the new balance.

    Raises:
        PermissionDenied: not an admin.
        NotFound: no such account.
        InvalidInput: amount not a positive whole number.
    """
    access.require(ctx, Action.ADMIN_CREDITS)
    _check_amount(amount)
    users.lock_user(ctx, user_id)
    _append(ctx, user_id, "grant", amount, note=note)
    audit.record(ctx, audit.AuditAction.CREDITS_GRANT, "user", user_id, amount=amount)
    return balance_of(ctx, user_id)


def reserve_credits(ctx: Context, amount: int, reference: str) -> str:
    """Hold `amount` of the acting user's credits for a job; returns the reservation id.

    Called by the run and training services after they have required the launching action,
    inside the same unit of work as the job it pays for.

    Raises:
        InsufficientCredits: the balance cannot cover `amount`; nothing is written.
        InvalidInput: negative amount.
    """
    if amount < 0 or amount > MAX_AMOUNT:
        raise invalid(["amount"], "must be between 0 and 10^12")
    user_id = _acting_user_id(ctx)
    users.lock_user(ctx, user_id)
    available = balance_of(ctx, user_id)
    if amount > available:
        raise InsufficientCredits(amount, available)
    return _append(ctx, user_id, "reserve", -amount, reference=reference).id


def settle_credits(ctx: Context, reservation_id: str, actual_cost: int) -> int:
    """Close a reservation at the real cost (capped at what was reserved); returns credits freed.

    Raises:
        NotFound: no such reservation.
        Conflict: it was already settled or refunded.
    """
    reservation = _open_reservation(ctx, reservation_id)
    held = -reservation.amount
    cost = min(max(actual_cost, 0), held)
    _append(ctx, reservation.user_id, "settle", held - cost, reservation.id, reservation.reference)
    return held - cost


def refund_credits(ctx: Context, reservation_id: str, reason: str) -> int:
    """Give a whole reservation back (the job failed through the platform's fault).

    Raises:
        NotFound: no such reservation.
        Conflict: it was already settled or refunded.
    """
    reservation = _open_reservation(ctx, reservation_id)
    held = -reservation.amount
    _append(ctx, reservation.user_id, "refund", held, reservation.id, reservation.reference, reason)
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


def _append(
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


def _acting_user_id(ctx: Context) -> str:
    if ctx.principal.user_id is None:
        raise invalid(["user"], "credits belong to a user; act --as one")
    return ctx.principal.user_id


def _check_amount(amount: int) -> None:
    if isinstance(amount, bool) or not isinstance(amount, int) or not 0 < amount <= MAX_AMOUNT:
        raise invalid(["amount"], "must be a whole number between 1 and 10^12")


def _line(row: CreditEntry) -> LedgerLine:
    return LedgerLine(
        row.id, row.kind, row.amount, row.reference, row.note, row.door, row.created_at
    )
