"""Counting password guesses and anonymous account requests, to throttle guessing and mail-bombing.

Rows share the sign-in failures' table and window: one client address has one budget for
everything it tries before anyone is known (failed sign-ins, sign-ups, reset requests).
"""

from __future__ import annotations

import ipaddress
from datetime import timedelta

from sqlalchemy import func, select

from benchgen.core.context import Context
from benchgen.core.errors import RateLimited
from benchgen.core.ids import new_id
from benchgen.db.locks import lock_named
from benchgen.db.tables import SigninAttempt


def require_room(
    ctx: Context,
    key: str,
    address: str,
    per_key: int | None,
    tried: str = "attempts",
    key_is: str = "request",
) -> None:
    """Refuse when `key` (an account, or `signup:<client>`…) has `per_key` recent attempts, or
    the client address has used its budget (only that, when `per_key` is None). Holds the key's
    and the address's locks until the caller's transaction ends, so the attempt it then counts
    is seen by the next caller.

    Raises:
        RateLimited: a window is full; `retry_at` is when its oldest attempt leaves it.
    """
    # Without the locks, a burst of guesses spread over several web processes on PostgreSQL
    # would each count the same attempts and let more through than the limit. Always the key
    # before the address, so two callers never wait on each other in opposite orders.
    address = client_of(address)
    lock_named(ctx.session, f"benchgen-attempts:key:{key[:320]}")
    lock_named(ctx.session, f"benchgen-attempts:address:{address}")
    window = timedelta(minutes=ctx.settings.signin_window_minutes)
    since = ctx.now() - window
    limits = [
        (SigninAttempt.address == address, ctx.settings.signin_failures_per_address, "address")
    ]
    if per_key is not None:
        limits.insert(0, (SigninAttempt.account == key[:320], per_key, key_is))
    for condition, limit, what in limits:
        count, oldest = ctx.session.execute(
            select(func.count(), func.min(SigninAttempt.at))
            .where(condition, SigninAttempt.at > since)
            .order_by(None)
        ).one()
        if count >= limit:
            # The oldest attempt in the window leaves it first; then one more try is allowed.
            retry_at = oldest + window
            raise RateLimited(
                f"Too many {tried} for this {what}; try again after "
                f"{retry_at:%Y-%m-%d %H:%M:%S} UTC.",
                retry_at,
                limit,
                f"{ctx.settings.signin_window_minutes} minutes",
            )


def count_attempt(ctx: Context, key: str, address: str) -> None:
    """Record one attempt, in the caller's transaction (which must commit to keep it)."""
    client = client_of(address)
    ctx.session.add(
        SigninAttempt(id=new_id("sia"), account=key[:320], address=client, at=ctx.now())
    )


def client_of(address: str) -> str:
    """The client whose budget an address spends: an IPv6 address counts as its /64 (a host or
    a home is handed a whole /64, so each address apart would give one client 2**64 budgets),
    an IPv4 address written as IPv6 (`::ffff:192.0.2.1`) as that IPv4 address, and anything
    else as written (at most 64 characters)."""
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        return address[:64]
    if isinstance(parsed, ipaddress.IPv6Address):
        if parsed.ipv4_mapped is not None:
            return str(parsed.ipv4_mapped)
        # From the integer: a zone (`fe80::1%eth0`) names the link, not another client.
        return str(ipaddress.IPv6Network((int(parsed) >> 64 << 64, 64)))
    return str(parsed)
