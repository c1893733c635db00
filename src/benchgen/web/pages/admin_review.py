"""Administration (admins only): reported agent replies and the audit log."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, time, timedelta
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import Response

from benchgen.agent.replies import printable
from benchgen.core.context import Context
from benchgen.core.errors import Conflict, NotFound
from benchgen.core.permissions import Action, PrincipalKind
from benchgen.services import access, audit
from benchgen.services.accounts import users
from benchgen.services.chat import reports
from benchgen.web.session import WebContext, csrf_checked
from benchgen.web.templating import redirect, render

router = APIRouter(dependencies=[Depends(csrf_checked)], include_in_schema=False)
PAGE_SIZE = 50
MAX_DETAILS = 400
Start = Annotated[int, Query(ge=0, le=1_000_000)]
DOORS = tuple(kind.value for kind in PrincipalKind)
ACTIONS = tuple(sorted(action.value for action in audit.AuditAction))


@router.get("/admin/reports", name="admin_reports")
def report_list(
    request: Request, ctx: WebContext, resolved: bool = False, start: Start = 0
) -> Response:
    """Agent replies users reported, with their notes: the open ones, or those resolved."""
    found = reports.list_reports(ctx, resolved, PAGE_SIZE + 1, start)
    return render(
        request,
        "admin/reports.html",
        reports=found[:PAGE_SIZE],
        more=len(found) > PAGE_SIZE,
        resolved=resolved,
        start=start,
        page_size=PAGE_SIZE,
        printable=printable,
    )


@router.post("/admin/reports/{report_id}/resolve", name="admin_report_resolve")
def report_resolve(request: Request, ctx: WebContext, report_id: str) -> Response:
    """Mark a report as dealt with."""
    try:
        reports.resolve_report(ctx, report_id)
    except Conflict as exc:
        return redirect(request, "admin_reports", flash=exc.message)
    return redirect(request, "admin_reports", flash="Marked as resolved.")


@router.get("/admin/audit", name="admin_audit")
def audit_log(
    request: Request,
    ctx: WebContext,
    user: Annotated[str, Query(max_length=320)] = "",
    door: Annotated[str, Query(max_length=80)] = "",
    action: Annotated[str, Query(max_length=80)] = "",
    since: Annotated[str, Query(alias="from", max_length=10)] = "",
    until: Annotated[str, Query(alias="to", max_length=10)] = "",
    start: Start = 0,
) -> Response:
    """The audit log, newest first, filtered by who, door, action and dates (UTC days)."""
    # Checked first: a filter that cannot be read must not let anyone past the admin check.
    access.require(ctx, Action.ADMIN_USERS)
    filters = {"user": user, "door": door, "action": action, "from": since, "to": until}
    problems: dict[str, str] = {}
    chosen = _filters(ctx, filters, problems)
    events = [] if problems else audit.list_events(ctx, None, PAGE_SIZE + 1, offset=start, **chosen)
    return render(
        request,
        "admin/audit.html",
        422 if problems else 200,
        events=[_event_row(ctx, event) for event in events[:PAGE_SIZE]],
        more=len(events) > PAGE_SIZE,
        filters=filters,
        problems=problems,
        doors=DOORS,
        actions=ACTIONS,
        start=start,
        page_size=PAGE_SIZE,
    )


def _filters(ctx: Context, typed: dict[str, str], problems: dict[str, str]) -> dict[str, Any]:
    """The service's filters from the form's fields; what cannot be read goes to `problems`."""
    chosen: dict[str, Any] = {"door": typed["door"] or None, "action": typed["action"] or None}
    if typed["user"].strip():
        try:
            chosen["user_id"] = users.get_user_by_email(ctx, typed["user"]).id
        except NotFound as exc:
            problems["user"] = exc.message
    first, last = _day(typed["from"], "from", problems), _day(typed["to"], "to", problems)
    if first and last and first > last:
        # Every event would be filtered out: an empty log looked like nothing had happened.
        problems["to"] = "is before From: no day is in between"
    chosen["since"] = datetime.combine(first, time(), UTC) if first else None
    # "To" names a whole day: everything before the next midnight (the last day has none).
    until = last + timedelta(days=1) if last and last < date.max else None
    chosen["until"] = datetime.combine(until, time(), UTC) if until else None
    return chosen


def _day(raw: str, name: str, problems: dict[str, str]) -> date | None:
    if not raw:
        return None
    try:
        return date.fromisoformat(raw)
    except ValueError:
        problems[name] = "must be a date such as 2025-01-31"
        return None


def _event_row(ctx: Context, event: Any) -> dict[str, Any]:
    details = json.dumps(event.details, ensure_ascii=False, sort_keys=True, default=str)
    if len(details) > MAX_DETAILS:
        details = details[:MAX_DETAILS] + "…"
    return {
        "at": event.at,
        "actor": audit.describe_actor(ctx, event),
        "door": event.door,
        "action": event.action,
        "object": f"{event.object_type} {event.object_id}",
        "details": "" if details == "{}" else details,
    }
