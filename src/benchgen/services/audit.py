"""The audit log: who, through which door, did what to which object, and when."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import or_, select

from benchgen.core.context import Context
from benchgen.core.ids import new_id
from benchgen.core.permissions import Action, PrincipalKind
from benchgen.db.tables import AuditEvent, User
from benchgen.services import access
from benchgen.services.specs import MAX_LIST, check_window


class AuditAction(StrEnum):
    """Every kind of change the audit log records: `area.verb`, one name per kind."""

    BENCHMARK_CREATE = "benchmark.create"
    BENCHMARK_DELETE = "benchmark.delete"
    BENCHMARK_EDIT = "benchmark.edit"
    BENCHMARK_FREEZE = "benchmark.freeze"
    BENCHMARK_PUBLISH = "benchmark.publish"
    BENCHMARK_RUN_QUOTA = "benchmark.run_quota"
    BENCHMARK_SCORING = "benchmark.scoring"
    BENCHMARK_UNPUBLISH = "benchmark.unpublish"
    BUNDLE_UPLOAD = "bundle.upload"
    COLLABORATOR_ADD = "collaborator.add"
    COLLABORATOR_INVITE = "collaborator.invite"
    COLLABORATOR_INVITE_REVOKE = "collaborator.invite_revoke"
    COLLABORATOR_REMOVE = "collaborator.remove"
    CREDITS_GRANT = "credits.grant"
    DATASET_CREATE = "dataset.create"
    DATASET_DELETE = "dataset.delete"
    DEPLOYMENT_SET = "deployment.set"
    EMAIL_VERIFY = "email.verify"
    INVITE_CREATE = "invite.create"
    JUDGE_SET = "judge.set"
    LEADERBOARD_ADD = "leaderboard.add"
    LEADERBOARD_REMOVE = "leaderboard.remove"
    MODEL_CREATE = "model.create"
    MODEL_CREATE_PLATFORM = "model.create_platform"
    MODEL_DELETE = "model.delete"
    MODEL_UPDATE = "model.update"
    NOTIFICATIONS_SET = "notifications.set"
    PARTICIPANT_JOIN = "participant.join"
    PARTICIPANT_STATUS = "participant.status"
    PARTICIPANTS_EMAIL = "participants.email"
    PASSWORD_CHANGE = "password.change"  # noqa: S105 - an action name, not a secret
    PASSWORD_RESET = "password.reset"  # noqa: S105 - an action name, not a secret
    PHASE_ADD = "phase.add"
    PHASE_REMOVE = "phase.remove"
    PROPOSAL_APPROVE = "proposal.approve"
    PROPOSAL_CREATE = "proposal.create"
    PROPOSAL_DECLINE = "proposal.decline"
    PROPOSAL_EXECUTE = "proposal.execute"
    RUN_CANCEL = "run.cancel"
    RUN_EDIT_SCORE = "run.edit_score"
    RUN_REJUDGE = "run.rejudge"
    RUN_RESCORE = "run.rescore"
    REPLY_REPORT = "reply.report"
    REPLY_RESOLVE = "reply.resolve"
    RUN_START = "run.start"
    SUBMISSION_CREATE = "submission.create"
    SESSION_END = "session.end"
    SESSION_START = "session.start"
    TASK_ADD = "task.add"
    TRAINING_CANCEL = "training.cancel"
    TRAINING_DELETE = "training.delete"
    TRAINING_FINISH = "training.finish"
    TRAINING_START = "training.start"
    TASK_REMOVE = "task.remove"
    TOKEN_CREATE = "token.create"  # noqa: S105 - an action name, not a secret
    TOKEN_REVOKE = "token.revoke"  # noqa: S105 - an action name, not a secret
    TOKEN_REVOKE_LEAKED = "token.revoke_leaked"  # noqa: S105 - an action name, not a secret
    USER_ACTIVATE = "user.activate"
    USER_CREATE = "user.create"
    USER_DISABLE = "user.disable"
    USER_GRANT_ADMIN = "user.grant_admin"
    USER_REVOKE_ADMIN = "user.revoke_admin"
    USER_SIGNUP = "user.signup"
    WHITELIST_ADD = "whitelist.add"
    WHITELIST_REMOVE = "whitelist.remove"


def record(
    ctx: Context,
    action: AuditAction,
    object_type: str,
    object_id: str,
    **details: Any,
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


def list_events(
    ctx: Context,
    object_id: str | None = None,
    limit: int = 100,
    *,
    offset: int = 0,
    user_id: str | None = None,
    door: str | None = None,
    action: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
) -> list[AuditEvent]:
    """Newest events first, filtered as asked (operator and admins only).

    Args:
        ctx: The unit of work.
        object_id: Only events about this object.
        limit: At most this many events (1..1000).
        offset: Skip this many of the newest first.
        user_id: Only what this user did, through any door (their agent turns included).
        door: A door kind (`web`, `api`, `agent`, `cli`, `system`) or one exact door
            (`api:tok_…`, `agent:turn_…`).
        action: Only this kind of event (an `AuditAction` value).
        since: Only events at or after this time.
        until: Only events before this time.

    Raises:
        PermissionDenied: not an admin or the operator.
        InvalidInput: limit outside 1..1000 or a negative offset.
    """
    access.require(ctx, Action.ADMIN_USERS)
    check_window(limit, offset, MAX_LIST)
    query = select(AuditEvent)
    if object_id is not None:
        query = query.where(AuditEvent.object_id == object_id)
    if user_id is not None:
        query = query.where(AuditEvent.user_id == user_id)
    if door:
        # `api` means every token's door; `api:tok_x` means that one token's.
        prefix = AuditEvent.door.startswith(f"{door}:", autoescape=True)
        query = query.where(or_(AuditEvent.door == door, prefix))
    if action:
        query = query.where(AuditEvent.action == action)
    if since is not None:
        query = query.where(AuditEvent.at >= since)
    if until is not None:
        query = query.where(AuditEvent.at < until)
    query = query.order_by(AuditEvent.at.desc(), AuditEvent.id).limit(limit).offset(offset)
    return list(ctx.session.scalars(query))
