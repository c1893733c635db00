"""Agent replies a user reported, with the user's note, kept for the operator to review."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError

from benchgen.core.context import Context
from benchgen.core.errors import Conflict, NotFound, invalid
from benchgen.core.ids import new_id
from benchgen.core.permissions import Action
from benchgen.core.statuses import TurnStatus
from benchgen.core.storable import require_storable
from benchgen.core.text import require_text
from benchgen.db.session import rows_changed
from benchgen.db.tables import ReportedReply, User
from benchgen.services import access, audit
from benchgen.services.accounts import leaks
from benchgen.services.chat import conversations
from benchgen.services.specs import check_window

MAX_NOTE = 2000
MAX_PAGE = 200


@dataclass(frozen=True)
class ReportView:
    """A reported reply as the operator reviews it: the reply exactly as the user saw it."""

    id: str
    user_id: str
    user_email: str
    conversation_id: str
    turn_id: str
    reply: str
    note: str
    created_at: datetime
    resolved_at: datetime | None


def report_reply(ctx: Context, conversation_id: str, turn_id: str, note: str = "") -> ReportView:
    """Report the agent's reply in one of the acting user's turns, with an optional note.

    The reply is copied as stored (already screened), so what the operator reads is what the
    user saw, even if the conversation changes later. One report per reply and user.

    Raises:
        PermissionDenied: the principal may not chat (an agent turn never reports).
        NotFound: no such turn in a conversation of the user's.
        InvalidInput: the note is too long or holds control or bidirectional characters.
        Conflict: the turn has no reply yet, or the user already reported it.
    """
    turn = conversations.get_turn(ctx, conversation_id, turn_id)
    # A token pasted into a note is as leaked as one in a message: revoked, not only hidden.
    note = leaks.screen_text(ctx, _checked_note(note)).text
    if turn.status == TurnStatus.RUNNING or not turn.reply:
        raise Conflict("This turn has no reply to report yet.", {"turn_id": turn.id})
    user_id = ctx.principal.user_id
    assert user_id is not None  # get_turn admits users only
    already = select(ReportedReply.id).where(
        ReportedReply.user_id == user_id, ReportedReply.turn_id == turn.id
    )
    if ctx.session.scalar(already) is not None:
        raise Conflict("You already reported this reply.", {"turn_id": turn.id})
    row = ReportedReply(
        id=new_id("rep"),
        user_id=user_id,
        conversation_id=turn.conversation_id,
        turn_id=turn.id,
        reply=turn.reply,
        note=note,
        created_at=ctx.now(),
        resolved_at=None,
    )
    try:
        # The unique constraint decides two reports sent at the same moment.
        with ctx.session.begin_nested():
            ctx.session.add(row)
            ctx.session.flush()
    except IntegrityError:
        raise Conflict("You already reported this reply.", {"turn_id": turn.id}) from None
    audit.record(ctx, audit.AuditAction.REPLY_REPORT, "reply_report", row.id, turn_id=turn.id)
    return _view(row, ctx.session.get(User, user_id))


def _checked_note(note: str) -> str:
    note = note.strip()
    if len(note) > MAX_NOTE:
        raise invalid(["note"], f"must be at most {MAX_NOTE} characters")
    require_storable(note, ["note"])
    return require_text(note, ["note"])


def list_reports(
    ctx: Context, resolved: bool = False, limit: int = 50, offset: int = 0
) -> list[ReportView]:
    """Reported replies, newest first: the open ones, or those already resolved (admins only).

    Raises:
        PermissionDenied: not an admin or the operator.
        InvalidInput: limit outside 1..200 or a negative offset.
    """
    access.require(ctx, Action.ADMIN_USERS)
    check_window(limit, offset, MAX_PAGE)
    done = (
        ReportedReply.resolved_at.is_not(None) if resolved else ReportedReply.resolved_at.is_(None)
    )
    query = (
        select(ReportedReply, User)
        .join(User, User.id == ReportedReply.user_id)
        .where(done)
        .order_by(ReportedReply.created_at.desc(), ReportedReply.id)
        .limit(limit)
        .offset(offset)
    )
    return [_view(row, user) for row, user in ctx.session.execute(query)]


def resolve_report(ctx: Context, report_id: str) -> ReportView:
    """Mark a reported reply as dealt with (admins only).

    Raises:
        PermissionDenied: not an admin or the operator.
        NotFound: no such report.
        Conflict: it was already resolved.
    """
    access.require(ctx, Action.ADMIN_USERS)
    row = ctx.session.get(ReportedReply, report_id)
    if row is None:
        raise NotFound("No such report.", {"id": report_id})
    # The conditional update decides two admins resolving at once: the second changes nothing,
    # and is refused rather than audited a second time.
    resolve = (
        update(ReportedReply)
        .where(ReportedReply.id == row.id, ReportedReply.resolved_at.is_(None))
        .values(resolved_at=ctx.now())
    )
    if rows_changed(ctx.session, resolve) != 1:
        raise Conflict("This report was already resolved.", {"id": report_id})
    ctx.session.refresh(row)
    audit.record(ctx, audit.AuditAction.REPLY_RESOLVE, "reply_report", row.id)
    return _view(row, ctx.session.get(User, row.user_id))


def _view(row: ReportedReply, user: User | None) -> ReportView:
    return ReportView(
        id=row.id,
        user_id=row.user_id,
        user_email=user.email if user is not None else row.user_id,
        conversation_id=row.conversation_id,
        turn_id=row.turn_id,
        reply=row.reply,
        note=row.note,
        created_at=row.created_at,
        resolved_at=row.resolved_at,
    )
