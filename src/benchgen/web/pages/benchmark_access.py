"""Who else is on a benchmark (owner only): collaborators, the join whitelist, participants."""

from __future__ import annotations

import re
from typing import Annotated

from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import Response

from benchgen.core.context import Context
from benchgen.core.errors import Conflict, InvalidInput, RateLimited
from benchgen.core.permissions import Action
from benchgen.services.benchmarks import invitations, lifecycle, members
from benchgen.services.runtime import undo_on_error
from benchgen.web.pages.accounts import send_mail_after
from benchgen.web.pages.benchmark_frame import back_to, render_tab
from benchgen.web.pages.question_form import Problems
from benchgen.web.session import WebContext, csrf_checked

router = APIRouter(dependencies=[Depends(csrf_checked)], include_in_schema=False)
ACCESS = "benchmark_settings_access"
UserId = Annotated[str, Form(max_length=64)]
# The whitelist form's text, at most: the service takes any number of entries. Checked in the page,
# not by the form's parser, so a longer paste comes back in its field with the reason.
MAX_ENTRIES_TEXT = 20_000


@router.get("/benchmarks/{benchmark_id}/settings/access", name=ACCESS)
def access_page(request: Request, ctx: WebContext, benchmark_id: str) -> Response:
    """Collaborators and pending invitations, whitelist and participants, each with its forms."""
    return _page(request, ctx, benchmark_id, {}, Problems())


@router.post(
    "/benchmarks/{benchmark_id}/settings/access/invitations", name="benchmark_collaborator_invite"
)
def collaborator_invite(
    request: Request,
    ctx: WebContext,
    benchmark_id: str,
    email: Annotated[str, Form(max_length=320)] = "",
) -> Response:
    """Invite an address to collaborate; its holder becomes a collaborator on accepting.

    The answer is the same whether or not the address has an account, and the mail goes out
    after the response, so neither its words nor its timing tell."""
    try:
        with undo_on_error(ctx):
            sent = invitations.invite_collaborator(ctx, benchmark_id, email)
    except (Conflict, InvalidInput, RateLimited) as exc:
        problems = Problems()
        problems.add("email", "Invitation", exc.message)
        return _page(request, ctx, benchmark_id, {"email": email}, problems, exc.http_status)
    note = f"Invitation sent to {sent.email}."
    response = back_to(request, ACCESS, note, benchmark_id=benchmark_id)
    return send_mail_after(request, response, sent.email)


@router.post(
    "/benchmarks/{benchmark_id}/settings/access/invitations/revoke",
    name="benchmark_invitation_revoke",
)
def invitation_revoke(
    request: Request,
    ctx: WebContext,
    benchmark_id: str,
    invitation_id: Annotated[str, Form(max_length=64)],
) -> Response:
    """Make a pending invitation's link useless."""
    try:
        with undo_on_error(ctx):
            invitations.revoke_invitation(ctx, benchmark_id, invitation_id)
    except Conflict as exc:
        problems = Problems()
        problems.add("invitations", "Invitation", exc.message)
        return _page(request, ctx, benchmark_id, {}, problems, exc.http_status)
    return back_to(request, ACCESS, "Invitation revoked.", benchmark_id=benchmark_id)


@router.post(
    "/benchmarks/{benchmark_id}/settings/access/collaborators/remove",
    name="benchmark_collaborator_remove",
)
def collaborator_remove(
    request: Request, ctx: WebContext, benchmark_id: str, user_id: UserId
) -> Response:
    """Take a collaborator's rights away at once."""
    members.remove_collaborator(ctx, benchmark_id, user_id)
    return back_to(request, ACCESS, "Collaborator removed.", benchmark_id=benchmark_id)


@router.post("/benchmarks/{benchmark_id}/settings/access/whitelist", name="benchmark_whitelist_add")
def whitelist_add(
    request: Request,
    ctx: WebContext,
    benchmark_id: str,
    entries: Annotated[str, Form()] = "",
) -> Response:
    """Admit exact emails and @domain entries (one per line, or separated by commas)."""
    wanted = [part for part in re.split(r"[\s,;]+", entries) if part]
    try:
        if not wanted:
            raise InvalidInput("Give at least one email or @domain.")
        if len(entries) > MAX_ENTRIES_TEXT:
            raise InvalidInput(f"Add at most {MAX_ENTRIES_TEXT} characters of entries at a time.")
        with undo_on_error(ctx):
            added = members.add_whitelist_entries(ctx, benchmark_id, wanted)
    except InvalidInput as exc:
        problems = Problems()
        for error in exc.details.get("errors") or [{"msg": exc.message}]:
            problems.add("entries", "Whitelist", str(error.get("msg", "")))
        return _page(request, ctx, benchmark_id, {"entries": entries}, problems, 422)
    note = f"Added {len(added)} entr{'y' if len(added) == 1 else 'ies'} to the whitelist."
    return back_to(request, ACCESS, note, benchmark_id=benchmark_id)


@router.post(
    "/benchmarks/{benchmark_id}/settings/access/whitelist/remove", name="benchmark_whitelist_remove"
)
def whitelist_remove(
    request: Request,
    ctx: WebContext,
    benchmark_id: str,
    entry: Annotated[str, Form(max_length=320)],
) -> Response:
    """Stop admitting an email or domain (those who joined stay)."""
    members.remove_whitelist_entry(ctx, benchmark_id, entry)
    return back_to(request, ACCESS, f"Removed {entry}.", benchmark_id=benchmark_id)


@router.post(
    "/benchmarks/{benchmark_id}/settings/access/participants", name="benchmark_participant_status"
)
def participant_status(
    request: Request,
    ctx: WebContext,
    benchmark_id: str,
    user_id: UserId,
    status: Annotated[str, Form(max_length=20)],
) -> Response:
    """Remove a participant, or let a removed one back."""
    members.set_participant_status(ctx, benchmark_id, user_id, status)
    return back_to(request, ACCESS, "Participant updated.", benchmark_id=benchmark_id)


def _page(
    request: Request,
    ctx: Context,
    benchmark_id: str,
    typed: dict[str, str],
    problems: Problems,
    status_code: int = 200,
) -> Response:
    found = lifecycle.get_benchmark_for(ctx, benchmark_id, Action.ACCESS_MANAGE)
    return render_tab(
        request,
        "benchmarks/settings_access.html",
        found,
        "benchmark_settings",
        status_code,
        settings_tab=ACCESS,
        collaborators=members.list_collaborators(ctx, benchmark_id),
        invitations=invitations.list_invitations(ctx, benchmark_id),
        invitation_days=invitations.LIFETIME.days,
        whitelist=members.list_whitelist(ctx, benchmark_id),
        participants=members.list_participants(ctx, benchmark_id),
        statuses=members.PARTICIPANT_STATUSES,
        email=typed.get("email", ""),
        entries=typed.get("entries", ""),
        problems=problems,
    )
