"""The outbox's rows without permission checks: queueing a message, for the services that
decided to send it, and claiming and recording a try, for the senders that checked first."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import ColumnElement, case, select, update

from benchgen.core.context import Context
from benchgen.core.ids import new_id
from benchgen.db.tables import OutboxEmail


@dataclass(frozen=True)
class Letter:
    """One queued message, as the sender needs it."""

    id: str
    to_email: str
    subject: str
    body: str


def record_mail(
    ctx: Context,
    to_email: str,
    subject: str,
    body: str,
    *,
    batch_id: str | None = None,
    benchmark_id: str | None = None,
) -> str:
    """Queue one message in the outbox, in the caller's transaction; returns its id.

    Account mail (links to verify, reset, join) has no benchmark. Without `BENCHGEN_SMTP_URL`
    it stays in the outbox, where the operator reads it (`benchgen admin outbox`).
    """
    row = OutboxEmail(
        id=new_id("mail"),
        batch_id=batch_id or new_id("mailb"),
        benchmark_id=benchmark_id,
        sender_user_id=ctx.principal.user_id,
        to_email=to_email,
        subject=subject,
        body=body,
        status="queued",
        created_at=ctx.now(),
    )
    ctx.session.add(row)
    return row.id


def claim(ctx: Context, due: ColumnElement[bool], count: int) -> list[tuple[Letter, datetime]]:
    """Claim up to `count` of the oldest messages `due`, queued ones first, for this sender
    alone (`sending` since `ctx.now()`, the time that names the claim), oldest first.

    One conditional update from what made them due to `sending`, so of two senders that both
    saw a message only one wins it, and only the winner sends it. PostgreSQL: `FOR UPDATE
    SKIP LOCKED` passes over a row another sender is claiming, and a row another claimed
    meanwhile fails the condition, checked again on the row as committed. SQLite: the
    statement takes the write lock before it reads, even in a transaction begun for reading.
    """
    now = ctx.now()
    first = case((OutboxEmail.status == "queued", 0), else_=1)
    chosen = (
        select(OutboxEmail.id)
        .where(due)
        .order_by(first, OutboxEmail.created_at, OutboxEmail.id)
        .limit(count)
        .with_for_update(skip_locked=True)
        # A CTE runs once: PostgreSQL may run a subquery again for each row it updates, and
        # each run chose one more message.
        .cte("chosen")
    )
    won = ctx.session.execute(
        update(OutboxEmail)
        .where(OutboxEmail.id.in_(select(chosen.c.id)), due)
        .values(status="sending", claimed_at=now)
        .returning(
            OutboxEmail.id,
            OutboxEmail.to_email,
            OutboxEmail.subject,
            OutboxEmail.body,
            OutboxEmail.created_at,
        )
        .execution_options(synchronize_session=False)
    ).all()
    oldest_first = sorted(won, key=lambda row: (row.created_at, row.id))
    return [(Letter(row.id, row.to_email, row.subject, row.body), now) for row in oldest_first]


def record_try(
    ctx: Context, message_id: str, claimed_at: datetime | None, status: str, error: str
) -> None:
    """Write a try's outcome (`sent`, `failed`, `bounced`) on a message while it is still
    claimed (by the claim made at `claimed_at`, when given); a no-op once another sender
    took the claim over or recorded it."""
    held = [OutboxEmail.id == message_id, OutboxEmail.status == "sending"]
    if claimed_at is not None:
        held.append(OutboxEmail.claimed_at == claimed_at)
    ctx.session.execute(
        update(OutboxEmail)
        .where(*held)
        .values(status=status, error=error, sent_at=ctx.now() if status == "sent" else None)
        .execution_options(synchronize_session=False)
    )
