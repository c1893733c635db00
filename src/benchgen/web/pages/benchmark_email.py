"""Emailing a benchmark's participants (owner only): compose, preview, send, and the record."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response

from benchgen.core.context import Context
from benchgen.core.errors import Conflict, InvalidInput
from benchgen.core.permissions import Action
from benchgen.services.benchmarks import lifecycle, members, outbox
from benchgen.services.benchmarks.outbox import EmailPreview
from benchgen.services.runtime import undo_on_error
from benchgen.web.pages.benchmark_frame import FormDep, back_to, render_tab
from benchgen.web.pages.question_form import Problems, problems_of, text_of
from benchgen.web.session import WebContext, csrf_checked

router = APIRouter(dependencies=[Depends(csrf_checked)], include_in_schema=False)
EMAIL = "benchmark_participants_email"


@router.get("/benchmarks/{benchmark_id}/participants/email", name=EMAIL)
def email_page(request: Request, ctx: WebContext, benchmark_id: str) -> Response:
    """The compose form and what was sent before."""
    return _page(request, ctx, benchmark_id, "", "", ["active"], None, Problems())


@router.post("/benchmarks/{benchmark_id}/participants/email", name="benchmark_participants_send")
def email_submit(request: Request, ctx: WebContext, benchmark_id: str, form: FormDep) -> Response:
    """Preview first (exactly what goes to whom); send only from the preview; edit goes back."""
    subject, body, step = text_of(form, "subject"), text_of(form, "body"), text_of(form, "step")
    statuses = [value for value in form.getlist("statuses") if isinstance(value, str)]
    shown = tuple(value for value in form.getlist("recipients") if isinstance(value, str))
    if step == "edit":
        return _page(request, ctx, benchmark_id, subject, body, statuses, None, Problems())
    changed: Conflict | None = None
    try:
        with undo_on_error(ctx):
            if step == "send":
                _nothing_sent_since(ctx, benchmark_id, text_of(form, "sent_before"))
                sent = outbox.send_participant_email(
                    ctx, benchmark_id, subject, body, tuple(statuses), shown
                )
                note = f"Queued {len(sent.recipients)} message(s); see the record below."
                return back_to(request, EMAIL, note, benchmark_id=benchmark_id)
    except Conflict as exc:
        changed = exc  # who it goes to changed since the preview: the new one, to check
    try:
        preview = outbox.preview_participant_email(
            ctx, benchmark_id, subject, body, tuple(statuses)
        )
    except InvalidInput as exc:
        problems = problems_of(exc, {})
        return _page(request, ctx, benchmark_id, subject, body, statuses, None, problems, 422)
    problems, status = Problems(), changed.http_status if changed else 200
    if changed:
        problems.add("", "", changed.message)
    return _page(request, ctx, benchmark_id, subject, body, statuses, preview, problems, status)


def _nothing_sent_since(ctx: Context, benchmark_id: str, newest_then: str) -> None:
    """Raise Conflict when a message went out after the preview was shown (`newest_then`: the
    newest batch then): Back to the preview and Send again mailed everyone the same twice."""
    newest = outbox.list_sent(ctx, benchmark_id, 1)
    if (newest[0].batch_id if newest else "") != newest_then:
        raise Conflict(
            "A message went to the participants after this preview (see the record below): "
            "check it was not this one before sending it again."
        )


def _page(
    request: Request,
    ctx: Context,
    benchmark_id: str,
    subject: str,
    body: str,
    statuses: list[str],
    preview: EmailPreview | None,
    problems: Problems,
    status_code: int = 200,
) -> Response:
    found = lifecycle.get_benchmark_for(ctx, benchmark_id, Action.PARTICIPANTS_EMAIL)
    return render_tab(
        request,
        "benchmarks/participants_email.html",
        found,
        "benchmark_settings",
        status_code,
        settings_tab=EMAIL,
        subject=subject,
        body=body,
        statuses=statuses,
        all_statuses=members.PARTICIPANT_STATUSES,
        preview=preview,
        sent=outbox.list_sent(ctx, benchmark_id),
        smtp=bool(ctx.settings.smtp_url),
        problems=problems,
    )
