"""Rolling-window limits on benchmark creation through the API and the agent (counted together).

A ledger row is written in the same transaction as the benchmark, under a per-user lock, so the
limit holds under concurrent requests and a rolled-back creation never counts.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import select

from benchgen.core.context import Context
from benchgen.core.errors import RateLimited
from benchgen.core.ids import new_id
from benchgen.core.permissions import DELEGATED_KINDS
from benchgen.db.tables import RateLimitEvent
from benchgen.services import accounts, overrides

CREATE_KEY = "benchmark.create"
WINDOWS = (("minute", timedelta(minutes=1)), ("day", timedelta(days=1)))


@dataclass(frozen=True)
class Quota:
    """The tighter of the two windows right now: what `X-RateLimit-*` headers report."""

    limit: int
    remaining: int
    reset_at: datetime
    window: str


def is_limited(ctx: Context) -> bool:
    """Only API tokens and agent turns are limited; the web app and the CLI are not."""
    return ctx.principal.kind in DELEGATED_KINDS


def consume_creation(ctx: Context, reference: str) -> None:
    """Count one benchmark creation for the acting user, or refuse it.

    Raises:
        RateLimited: a window is full; `retry_at` is when every full window has room again.
    """
    if not is_limited(ctx):
        return
    user_id = ctx.principal.user_id
    assert user_id is not None  # delegated principals always act for a user
    accounts.lock_user(ctx, user_id)
    now = ctx.now()
    full = [
        (times[len(times) - limit] + span, window, limit)
        for window, span, limit, times in _windows(ctx, user_id, now)
        if len(times) >= limit
    ]
    if full:
        # When both windows are full, the earlier time would be a false promise: report the
        # later one, when the creation will really be allowed.
        retry_at, window, limit = max(full)
        raise RateLimited(
            f"Benchmark creation is limited to {limit} per {window}; "
            f"try again after {retry_at:%Y-%m-%d %H:%M:%S} UTC.",
            retry_at,
            limit,
            window,
        )
    ctx.session.add(
        RateLimitEvent(
            id=new_id("rl"), user_id=user_id, key=CREATE_KEY, at=now, reference=reference
        )
    )


def creation_quota(ctx: Context) -> Quota:
    """What is left for the acting user in the tighter window (for response headers)."""
    user_id = ctx.principal.user_id or ""
    now = ctx.now()
    quotas = []
    for window, span, limit, times in _windows(ctx, user_id, now):
        reset = times[0] + span if times else now
        quotas.append(Quota(limit, max(limit - len(times), 0), reset, window))
    return min(quotas, key=lambda quota: (quota.remaining, quota.reset_at))


def _windows(
    ctx: Context, user_id: str, now: datetime
) -> list[tuple[str, timedelta, int, list[datetime]]]:
    """Each window with its limit and the creation times inside it, oldest first."""
    day_ago = now - timedelta(days=1)
    times = list(
        ctx.session.scalars(
            select(RateLimitEvent.at)
            .where(
                RateLimitEvent.user_id == user_id,
                RateLimitEvent.key == CREATE_KEY,
                RateLimitEvent.at > day_ago,
            )
            .order_by(RateLimitEvent.at)
        )
    )
    limits = {
        "minute": overrides.effective(ctx, "create_limit_per_minute"),
        "day": overrides.effective(ctx, "create_limit_per_day"),
    }
    return [
        (name, span, int(limits[name]), [at for at in times if at > now - span])
        for name, span in WINDOWS
    ]
