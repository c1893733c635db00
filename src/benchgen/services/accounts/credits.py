"""Credits: an append-only integer ledger (grant, reserve, settle, refund); balance is its sum.

Here are the checked doors: reading one's own balance and ledger, granting credits. Reserving,
settling and refunding for a job happen in `_ledger`, called by the services that checked first.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select

from benchgen.core.context import Context
from benchgen.core.errors import invalid
from benchgen.core.permissions import Action
from benchgen.core.text import require_line
from benchgen.db.tables import CreditEntry
from benchgen.services import access, audit
from benchgen.services.accounts import _ledger, users
from benchgen.services.specs import MAX_LIST, check_window

MAX_NOTE = 500


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


def get_balance(ctx: Context) -> int:
    """The acting user's balance.

    Raises:
        PermissionDenied: the principal may not read credits.
    """
    access.require(ctx, Action.CREDITS_READ)
    return _ledger.balance_of(ctx, _ledger.acting_user_id(ctx))


def my_balance(ctx: Context) -> int:
    """The acting user's balance, shown beside who they are (any live credential of theirs).

    Raises:
        Unauthenticated: the account or credential is no longer valid.
    """
    return _ledger.balance_of(ctx, users.get_me(ctx).id)


def list_balances(ctx: Context, user_ids: list[str]) -> dict[str, int]:
    """The balances of the given accounts, by user id, in one query (for the admin's list of
    users; an unknown id reads as 0).

    Raises:
        PermissionDenied: not an admin.
        InvalidInput: more than MAX_USER_PAGE ids.
    """
    access.require(ctx, Action.ADMIN_USERS)
    if len(user_ids) > users.MAX_USER_PAGE:
        raise invalid(["user_ids"], f"must be at most {users.MAX_USER_PAGE}")
    return _ledger.balances_of(ctx, user_ids)


def list_ledger(ctx: Context, limit: int = 50, before: str | None = None) -> list[LedgerLine]:
    """The acting user's ledger, newest first; `before` is the id of the last line already seen.

    Raises:
        PermissionDenied: the principal may not read credits.
        InvalidInput: limit outside 1..MAX_LIST, or an unknown cursor.
    """
    access.require(ctx, Action.CREDITS_READ)
    check_window(limit, 0, MAX_LIST)
    query = select(CreditEntry).where(CreditEntry.user_id == _ledger.acting_user_id(ctx))
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
        InvalidInput: amount not a positive whole number, or a note over 500 characters or
            holding control or bidirectional characters (the account's holder reads it).
    """
    access.require(ctx, Action.ADMIN_CREDITS)
    _check_amount(amount)
    note = _checked_note(note)
    users.lock_user(ctx, user_id)
    _ledger.append_entry(ctx, user_id, "grant", amount, note=note)
    audit.record(ctx, audit.AuditAction.CREDITS_GRANT, "user", user_id, amount=amount, note=note)
    return _ledger.balance_of(ctx, user_id)


def _checked_note(note: str) -> str:
    # Refused, not cut: the ledger kept the first 500 characters of a longer note in silence.
    if len(note) > MAX_NOTE:
        raise invalid(["note"], f"must be at most {MAX_NOTE} characters")
    return require_line(note, ["note"], required=False)


def _check_amount(amount: int) -> None:
    if (
        isinstance(amount, bool)
        or not isinstance(amount, int)
        or not 0 < amount <= _ledger.MAX_AMOUNT
    ):
        raise invalid(["amount"], f"must be a whole number between 1 and {_ledger.MAX_AMOUNT:,}")


def _line(row: CreditEntry) -> LedgerLine:
    return LedgerLine(
        row.id, row.kind, row.amount, row.reference, row.note, row.door, row.created_at
    )
