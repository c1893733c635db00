"""The audit log: who, through which door, did what to which object, and when."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from benchgen.core.context import Context
from benchgen.core.ids import new_id
from benchgen.core.permissions import Action, PrincipalKind
from benchgen.db.tables import AuditEvent, User
from benchgen.services import access


def record(
    ctx: Context, action: str, object_type: str, object_id: str, **details: Any
) -> AuditEvent:
    """Append one audit row in the caller's transaction (so it commits or rolls back with it)."""
    event = AuditEvent(
        id=new_id("aud"),
        at=ctx.now(),
        user_id=ctx.principal.user_id,
        door=ctx.principal.door,
        action=action,
        object_type=object_type,
        object_id=object_id,
        details=details,
    )
    ctx.session.add(event)
    return event


def describe_actor(ctx: Context, event: AuditEvent) -> str:
    """How a person reads the actor: 'ana@x', 'agent acting for ana@x', 'operator', 'system'."""
    if event.user_id is None:
        return "operator" if event.door == PrincipalKind.CLI.value else event.door
    email = ctx.session.get(User, event.user_id)
    who = email.email if email else event.user_id
    return f"agent acting for {who}" if event.door.startswith("agent:") else who


def list_events(ctx: Context, object_id: str | None = None, limit: int = 100) -> list[AuditEvent]:
    """Newest events first, optionally for one object (operator and admins only).

    Raises:
        PermissionDenied: not an admin or the operator.
    """
    access.require(ctx, Action.ADMIN_USERS)
    query = select(AuditEvent).order_by(AuditEvent.at.desc(), AuditEvent.id).limit(limit)
    if object_id is not None:
        query = query.where(AuditEvent.object_id == object_id)
    return list(ctx.session.scalars(query))
