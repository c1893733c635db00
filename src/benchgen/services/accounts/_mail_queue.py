"""Queueing a message in the outbox, without permission checks: for the account services that
decided to send it (verification, reset and invitation links)."""

from __future__ import annotations

from benchgen.core.context import Context
from benchgen.core.ids import new_id
from benchgen.db.tables import OutboxEmail


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
