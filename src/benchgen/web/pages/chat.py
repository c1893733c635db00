"""The web chat: conversations, messages, approval cards and choices, over the chat service.

A message goes through the same turn runner as the API's, as the signed-in session: the turn's
credential is tied to that session, so signing out ends the turn. Approve, decline and choice
buttons post the same controls the API's buttons carry; the services decide what they do.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Form, Query, Request
from fastapi.responses import Response
from pydantic import ValidationError

from benchgen.agent.messages import MessageIn
from benchgen.agent.replies import printable
from benchgen.agent.runner import TurnRunner
from benchgen.core.context import Context
from benchgen.core.errors import Conflict, InvalidInput
from benchgen.services.accounts import leaks
from benchgen.services.accounts.sessions import LiveSession
from benchgen.services.chat import conversations, reports
from benchgen.services.runtime import transaction
from benchgen.web.session import SessionDep, WebContext, csrf_checked, runtime_of
from benchgen.web.templating import redirect, render

router = APIRouter(dependencies=[Depends(csrf_checked)], include_in_schema=False)
PAGE_SIZE = 50
# A conversation shows its latest turns; older ones come a page at a time on request.
TURNS_PAGE = 50
# A page answers within seconds: a longer turn shows "working…" and the page polls for it.
WEB_WAIT_S = 10.0
Id = Annotated[str, Form(min_length=1, max_length=40)]
# The heading of each kind's approval card (tests/web/test_chat.py checks that none is missing).
PROPOSAL_TITLES = {
    "create_benchmark": "Create a benchmark",
    "edit_benchmark": "Change a benchmark",
    "publish_benchmark": "Publish a benchmark",
    "start_run": "Run a model",
    "change_bundle": "Change a custom benchmark's bundle",
    "start_training": "Train a model",
}


@router.get("/chat", name="chat")
def chat_home(
    request: Request, ctx: WebContext, start: Annotated[int, Query(ge=0, le=100_000)] = 0
) -> Response:
    """My conversations, most recently active first, and a form to start one."""
    return _list_page(request, ctx, start)


def _list_page(
    request: Request, ctx: Context, start: int = 0, status: int = 200, **form: str
) -> Response:
    listed = conversations.list_conversations(ctx, PAGE_SIZE + 1, start)
    return render(
        request,
        "chat/list.html",
        status,
        conversations=listed[:PAGE_SIZE],
        start=start,
        more=len(listed) > PAGE_SIZE,
        page_size=PAGE_SIZE,
        title=form.get("title", ""),
        error=form.get("error", ""),
    )


@router.post("/chat", name="chat_new")
def chat_new(request: Request, ctx: WebContext, title: Annotated[str, Form()] = "") -> Response:
    """Start a conversation (the title is optional) and open it."""
    try:
        made = conversations.create_conversation(ctx, title)
    except InvalidInput as exc:
        return _list_page(request, ctx, status=422, title=title, error=_said(exc, "title", "Title"))
    return redirect(request, "conversation", conversation_id=made.id)


@router.get("/chat/{conversation_id}", name="conversation")
def conversation_page(
    request: Request,
    ctx: WebContext,
    conversation_id: str,
    before: Annotated[int | None, Query(ge=1, le=conversations.MAX_SEQ)] = None,
) -> Response:
    """One conversation: its latest messages (or those numbered below `before`), the pending
    proposal's card, choices, the send form."""
    return _page(request, ctx, conversation_id, before=before)


@router.get("/chat/{conversation_id}/turns/{turn_id}", name="chat_turn")
def turn_fragment(
    request: Request, ctx: WebContext, conversation_id: str, turn_id: str
) -> Response:
    """The messages, for a page polling while `turn_id` runs (the whole page otherwise)."""
    conversations.get_turn(ctx, conversation_id, turn_id)
    if not _htmx(request):
        return redirect(request, "conversation", conversation_id=conversation_id)
    return _transcript(request, ctx, conversation_id)


@router.post("/chat/{conversation_id}/messages", name="chat_send")
def chat_send(
    request: Request, live: SessionDep, conversation_id: str, text: Annotated[str, Form()] = ""
) -> Response:
    """Send typed words to the agent."""
    if not text.strip():
        return _refused(request, live, conversation_id, 422, "Type a message first.", text)
    return _send(request, live, conversation_id, {"text": text}, text)


@router.post("/chat/{conversation_id}/approve", name="chat_approve")
def chat_approve(
    request: Request,
    live: SessionDep,
    conversation_id: str,
    proposal_id: Id,
    preview_hash: Annotated[str, Form(max_length=64)],
) -> Response:
    """Approve exactly the proposal shown: its id and the hash of its preview."""
    action = {"type": "approve", "proposal_id": proposal_id, "preview_hash": preview_hash}
    return _send(request, live, conversation_id, {"action": action})


@router.post("/chat/{conversation_id}/decline", name="chat_decline")
def chat_decline(
    request: Request, live: SessionDep, conversation_id: str, proposal_id: Id
) -> Response:
    """Decline the proposal shown: nothing of it happens."""
    action = {"type": "decline", "proposal_id": proposal_id}
    return _send(request, live, conversation_id, {"action": action})


@router.post("/chat/{conversation_id}/choose", name="chat_choose")
def chat_choose(
    request: Request,
    live: SessionDep,
    conversation_id: str,
    turn_id: Id,
    option: Annotated[int, Form(ge=0, lt=50)],
) -> Response:
    """Press a choice button: it answers the agent's question and never approves anything."""
    action = {"type": "choose", "turn_id": turn_id, "option": option}
    return _send(request, live, conversation_id, {"action": action})


@router.post("/chat/{conversation_id}/turns/{turn_id}/report", name="chat_report")
def chat_report(
    request: Request,
    live: SessionDep,
    conversation_id: str,
    turn_id: str,
    note: Annotated[str, Form(max_length=10_000)] = "",
) -> Response:
    """Report an agent reply to the operators, with a note saying what is wrong with it.

    The note is screened in a transaction of its own first: a token pasted into it is revoked
    (A15) even when the report is then refused, whose rollback took the revocation with it, and
    the form shown again carries the note without the token."""
    runtime = runtime_of(request)
    with transaction(runtime, live.principal) as ctx:
        note = leaks.screen_text(ctx, note).text
    try:
        with transaction(runtime, live.principal) as ctx:
            reports.report_reply(ctx, conversation_id, turn_id, note)
    except (InvalidInput, Conflict) as exc:
        report = {"turn_id": turn_id, "note": note, "error": exc.message}
        with _reading(request, live) as ctx:
            before = _page_of(ctx, conversation_id, turn_id)
            return _page(
                request, ctx, conversation_id, exc.http_status, report=report, before=before
            )
    return redirect(
        request,
        "conversation",
        flash="Thank you: the reply and your note were sent to the operators.",
        conversation_id=conversation_id,
    )


def _page_of(ctx: Context, conversation_id: str, turn_id: str) -> int | None:
    """The `before` of the page that shows the turn last (None: the latest page shows it), so a
    refusal next to an older turn's form is seen."""
    seq = conversations.get_turn(ctx, conversation_id, turn_id).seq
    _, (latest,) = conversations.get_conversation(ctx, conversation_id, 1)
    return None if latest.seq - seq < TURNS_PAGE else seq + 1


def _send(
    request: Request, live: LiveSession, conversation_id: str, body: dict[str, Any], draft: str = ""
) -> Response:
    """Run a turn as the session; answer with the messages (htmx) or post/redirect/get.

    No unit of work is open here: the runner opens its own, and the turn's claim must commit
    before the agent thinks (on SQLite a held write lock would make the runner wait).
    """
    runner: TurnRunner = request.app.state.turn_runner
    wait_s = min(runtime_of(request).settings.agent_wait_s, WEB_WAIT_S)
    try:
        runner.send(live.principal, conversation_id, MessageIn.model_validate(body), wait_s)
    except ValidationError as exc:
        problem = "; ".join(str(error["msg"]) for error in exc.errors())
        return _refused(request, live, conversation_id, 422, problem, draft)
    except InvalidInput as exc:
        said = _said(exc, "text", "Message")
        return _refused(request, live, conversation_id, exc.http_status, said, draft)
    except Conflict as exc:
        return _refused(request, live, conversation_id, exc.http_status, exc.message, draft)
    if not _htmx(request):
        return redirect(request, "conversation", conversation_id=conversation_id)
    with _reading(request, live) as ctx:
        return _transcript(request, ctx, conversation_id, fresh_form=True)


def _refused(
    request: Request, live: LiveSession, conversation_id: str, status: int, error: str, draft: str
) -> Response:
    """Say why a message was not taken, next to the form, keeping what was typed."""
    with _reading(request, live) as ctx:
        if _htmx(request):
            # htmx swaps only successful answers: the refusal comes as one, shown in the form.
            return _transcript(request, ctx, conversation_id, True, error=error, draft=draft)
        return _page(request, ctx, conversation_id, status, error=error, draft=draft)


@contextmanager
def _reading(request: Request, live: LiveSession) -> Iterator[Context]:
    with transaction(runtime_of(request), live.principal, write=False) as ctx:
        yield ctx


def _page(
    request: Request,
    ctx: Context,
    conversation_id: str,
    status: int = 200,
    *,
    error: str = "",
    draft: str = "",
    report: dict[str, str] | None = None,
    before: int | None = None,
) -> Response:
    conversation, turns = conversations.get_conversation(ctx, conversation_id, TURNS_PAGE, before)
    return render(
        request,
        "chat/conversation.html",
        status,
        kinds=PROPOSAL_TITLES,
        printable=printable,
        conversation=conversation,
        turns=turns,
        before=before,
        error=error,
        draft=draft,
        report=report or {},
    )


def _transcript(
    request: Request,
    ctx: Context,
    conversation_id: str,
    fresh_form: bool = False,
    *,
    error: str = "",
    draft: str = "",
) -> Response:
    """The latest messages; after a send, the form too (swapped out of band, emptied)."""
    conversation, turns = conversations.get_conversation(ctx, conversation_id, TURNS_PAGE)
    return render(
        request,
        "chat/fragment.html",
        kinds=PROPOSAL_TITLES,
        printable=printable,
        conversation=conversation,
        turns=turns,
        before=None,
        report={},
        with_form=fresh_form,
        error=error,
        draft=draft,
    )


def _said(exc: InvalidInput, field: str, label: str) -> str:
    """The refusal in the form's words: "Title: …" where the service named its field "title: …"."""
    prefix = f"{field}: "
    if not exc.message.startswith(prefix):
        return exc.message
    return f"{label}: {exc.message.removeprefix(prefix)}"


def _htmx(request: Request) -> bool:
    return request.headers.get("hx-request") == "true"
