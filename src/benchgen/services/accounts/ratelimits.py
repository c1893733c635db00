"""Rolling-window limits: benchmark creation (API and agent together) and runs by outsiders.

A ledger row is written in the same transaction as what it counts, under a per-user lock, so a
limit holds under concurrent requests and a rolled-back creation or launch never counts.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import select

from benchgen.core.context import Context
from benchgen.core.errors import RateLimited, invalid
from benchgen.core.ids import new_id
from benchgen.core.permissions import DELEGATED_KINDS, Action, Role
from benchgen.db.tables import Benchmark, RateLimitEvent, User
from benchgen.services import access, audit, overrides
from benchgen.services.accounts import users

CREATE_KEY = "benchmark.create"
WINDOWS = (("minute", timedelta(minutes=1)), ("day", timedelta(days=1)))
DAY = timedelta(days=1)
# One ledger key per benchmark: a user's runs on one benchmark never use up another's quota.
RUN_KEY = "benchmark.run:{benchmark_id}"
MAX_RUN_QUOTA = 1000
TEAM = frozenset({Role.OWNER, Role.COLLABORATOR})


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
    user_id = _limited_user(ctx)
    if user_id is None:
        return
    users.lock_user(ctx, user_id)
    _require_room(ctx, user_id)
    _count(ctx, user_id, CREATE_KEY, reference)


def require_creation_room(ctx: Context) -> None:
    """Refuse, without counting anything, when the acting user may not create a benchmark now:
    a look that reads only, before slow work that would end in a creation (a bundle's programs).
    `consume_creation` still decides, when the creation is stored.

    Raises:
        RateLimited: a window is full; `retry_at` is when every full window has room again.
    """
    user_id = _limited_user(ctx)
    if user_id is not None:
        _require_room(ctx, user_id)


def _limited_user(ctx: Context) -> str | None:
    """The acting user when their creations are limited (`is_limited`), else None."""
    if not is_limited(ctx):
        return None
    user_id = ctx.principal.user_id
    assert user_id is not None  # delegated principals always act for a user
    return user_id


def _require_room(ctx: Context, user_id: str) -> None:
    """Refuse when a creation window of the user is full.

    Raises:
        RateLimited: a window is full; `retry_at` is when every full window has room again.
    """
    full = [quota for quota in _quotas(ctx, user_id) if quota.remaining == 0]
    if full:
        # When both windows are full, the earlier time would be a false promise: report the
        # later one, when the creation will really be allowed.
        worst = max(full, key=lambda quota: quota.reset_at)
        raise RateLimited(
            f"Benchmark creation is limited to {worst.limit} per {worst.window}; "
            f"try again after {worst.reset_at:%Y-%m-%d %H:%M:%S} UTC.",
            worst.reset_at,
            worst.limit,
            worst.window,
        )


def creation_quota(ctx: Context) -> Quota:
    """What is left for the acting user in the tighter window (for response headers): with
    both full, the one that frees later, as the refusal says."""
    quotas = _quotas(ctx, ctx.principal.user_id or "")
    return min(quotas, key=lambda quota: (quota.remaining, -quota.reset_at.timestamp()))


def _quotas(ctx: Context, user_id: str) -> list[Quota]:
    """Each creation window as a quota, minute first."""
    now = ctx.now()
    return [
        _quota(times, limit, span, window, now)
        for window, span, limit, times in _windows(ctx, user_id, now)
    ]


def _quota(times: list[datetime], limit: int, span: timedelta, window: str, now: datetime) -> Quota:
    """A window holding `times` (oldest first): what is left, and when it next gains room. A
    limit lowered below what the window holds frees a place only once all but `limit - 1` of
    them have left it, not when the oldest does."""
    reset = times[max(len(times) - limit, 0)] + span if times else now
    return Quota(limit, max(limit - len(times), 0), reset, window)


def _windows(
    ctx: Context, user_id: str, now: datetime
) -> list[tuple[str, timedelta, int, list[datetime]]]:
    """Each window with its limit and the creation times inside it, oldest first."""
    times = _times(ctx, user_id, CREATE_KEY, now - DAY)
    limits = {
        "minute": overrides.effective(ctx, "create_limit_per_minute"),
        "day": overrides.effective(ctx, "create_limit_per_day"),
    }
    return [
        (name, span, int(limits[name]), [at for at in times if at > now - span])
        for name, span in WINDOWS
    ]


def consume_run(ctx: Context, benchmark: Benchmark, reference: str) -> None:
    """Count one run on `benchmark` for the acting user, or refuse it: the one place that
    counts runs, so submissions and item retries call it too.

    Called by services after they have required the launching action, inside the unit of work
    that accepts the run. The owner and collaborators are never counted; everyone else is,
    through every door (participants too: they never see the key either).

    Raises:
        RateLimited: the user's runs on this benchmark in the last 24 hours reached its quota;
            `retry_at` is when the oldest of them leaves the window.
    """
    limit = _run_limit(ctx, benchmark)
    if limit is None:
        return
    user_id = ctx.principal.user_id
    assert user_id is not None  # only a user is ever allowed to launch a run
    key = RUN_KEY.format(benchmark_id=benchmark.id)
    users.lock_user(ctx, user_id)
    quota = _quota(_times(ctx, user_id, key, ctx.now() - DAY), limit, DAY, "day", ctx.now())
    if quota.remaining == 0:
        retry_at = quota.reset_at
        refusal = RateLimited(
            f"Runs on this benchmark by people outside its team are limited to {limit} per "
            f"user per day; allowed again at {retry_at:%Y-%m-%d %H:%M:%S} UTC.",
            retry_at,
            limit,
            "day",
        )
        refusal.details["benchmark_id"] = benchmark.id
        raise refusal
    _count(ctx, user_id, key, reference)


def _run_limit(ctx: Context, benchmark: Benchmark) -> int | None:
    """Runs per rolling day the acting user may make on `benchmark`; None for its team."""
    user = ctx.session.get(User, ctx.principal.user_id) if ctx.principal.user_id else None
    if user is not None and access.roles_on(ctx, user, benchmark) & TEAM:
        return None
    return _stranger_quota(ctx, benchmark)


def _stranger_quota(ctx: Context, benchmark: Benchmark) -> int:
    """The owner's quota for this benchmark, else the deployment's."""
    if benchmark.stranger_runs_per_day is not None:
        return benchmark.stranger_runs_per_day
    return int(overrides.effective(ctx, "stranger_runs_per_day"))


def run_quota(ctx: Context, benchmark_id: str) -> Quota | None:
    """What is left today of the acting user's runs on a benchmark; None when not limited.

    Raises:
        NotFound: the benchmark is not visible to the principal.
    """
    benchmark = access.require_benchmark(ctx, benchmark_id, Action.BENCHMARK_READ)
    limit = _run_limit(ctx, benchmark)
    if limit is None or ctx.principal.user_id is None:
        return None
    now = ctx.now()
    key = RUN_KEY.format(benchmark_id=benchmark.id)
    return _quota(_times(ctx, ctx.principal.user_id, key, now - DAY), limit, DAY, "day", now)


@dataclass(frozen=True)
class RunQuotaSetting:
    """A benchmark's quota for outsiders: the owner's own number (None: the deployment's) and
    the number in force."""

    runs_per_day: int | None
    in_force: int


def get_run_quota_setting(ctx: Context, benchmark_id: str) -> RunQuotaSetting:
    """How many runs per day outsiders may make on a benchmark, as its owner set it.

    Raises:
        NotFound: the benchmark is not visible to the principal.
        PermissionDenied: not the owner, or an API token or the agent asked.
    """
    benchmark = access.require_benchmark(ctx, benchmark_id, Action.RUN_QUOTA_MANAGE)
    return RunQuotaSetting(benchmark.stranger_runs_per_day, _stranger_quota(ctx, benchmark))


def set_run_quota(ctx: Context, benchmark_id: str, runs_per_day: int | None) -> int:
    """Set how many runs per user per day people outside the team may make on a benchmark
    (None: the deployment's default); returns the quota now in force.

    Only the owner, and only in the web app or the CLI: the quota bounds how fast outsiders
    can learn the answer key from aggregate scores, so no token or agent turn may raise it.

    Raises:
        NotFound: the benchmark is not visible to the principal.
        PermissionDenied: not the owner, or an API token or the agent asked.
        InvalidInput: not a whole number from 1 to MAX_RUN_QUOTA.
    """
    benchmark = access.require_benchmark(ctx, benchmark_id, Action.RUN_QUOTA_MANAGE)
    if runs_per_day is not None and not 1 <= runs_per_day <= MAX_RUN_QUOTA:
        raise invalid(["runs_per_day"], f"must be a whole number from 1 to {MAX_RUN_QUOTA}")
    before = benchmark.stranger_runs_per_day
    benchmark.stranger_runs_per_day, benchmark.updated_at = runs_per_day, ctx.now()
    audit.record(
        ctx,
        audit.AuditAction.BENCHMARK_RUN_QUOTA,
        "benchmark",
        benchmark.id,
        before=before,
        after=runs_per_day,
    )
    return _stranger_quota(ctx, benchmark)


def _times(ctx: Context, user_id: str, key: str, since: datetime) -> list[datetime]:
    """When the user's events under `key` after `since` happened, oldest first."""
    return list(
        ctx.session.scalars(
            select(RateLimitEvent.at)
            .where(
                RateLimitEvent.user_id == user_id,
                RateLimitEvent.key == key,
                RateLimitEvent.at > since,
            )
            .order_by(RateLimitEvent.at)
        )
    )


def _count(ctx: Context, user_id: str, key: str, reference: str) -> None:
    ctx.session.add(
        RateLimitEvent(id=new_id("rl"), user_id=user_id, key=key, at=ctx.now(), reference=reference)
    )
