"""`/api/v1/chat`: conversations with the agent, kept on the server; clients send only messages."""

from __future__ import annotations

from dataclasses import asdict, replace
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request

from benchgen.agent.messages import MessageIn
from benchgen.agent.replies import printable
from benchgen.agent.runner import TurnRunner
from benchgen.api.deps import ContextDep, PrincipalDep, RuntimeDep, checked_input
from benchgen.api.errors import COMMON, responses
from benchgen.api.paging import Cursor, Keyset, newest, page
from benchgen.api.routing import OneThreadRoute
from benchgen.api.schemas import ConversationIn, Page, Transcript, TurnOut
from benchgen.services.chat import conversations
from benchgen.services.chat.conversations import ConversationView, TurnView
from benchgen.services.keysets import Newest

router = APIRouter(
    prefix="/api/v1/chat", tags=["chat"], responses=COMMON, route_class=OneThreadRoute
)
READ = {"x-scope": "read"}
# One row more than the page is fetched to learn whether another follows; the service's
# window allows 200, so pages stay well below it.
Limit = Annotated[int, Query(ge=1, le=100)]
# A transcript's page of older turns: those numbered below this.
Before = Annotated[int | None, Query(ge=1, le=conversations.MAX_SEQ)]
# Most recently active first: a conversation's key is its last activity, not its creation.
CONVERSATIONS: Keyset[ConversationView, Newest] = newest(
    "conversations", lambda row: (row.updated_at, row.id)
)


def get_runner(request: Request) -> TurnRunner:
    """The turn runner the app was built with."""
    runner: TurnRunner = request.app.state.turn_runner
    return runner


@router.post("/conversations", status_code=201, response_model=ConversationView, openapi_extra=READ)
def create_conversation(ctx: ContextDep, body: ConversationIn | None = None) -> ConversationView:
    """Start an empty conversation with the agent (the title is optional)."""
    return conversations.create_conversation(ctx, body.title if body else "")


@router.get("/conversations", response_model=Page[ConversationView], openapi_extra=READ)
def list_conversations(ctx: ContextDep, limit: Limit = 50, cursor: Cursor = None) -> dict[str, Any]:
    """Your conversations, most recently active first."""
    return page(
        CONVERSATIONS,
        lambda n, after: conversations.list_conversations(ctx, n, after=after),
        cursor,
        limit,
    )


@router.get("/conversations/{conversation_id}", response_model=Transcript, openapi_extra=READ)
def get_conversation(
    ctx: ContextDep, conversation_id: str, limit: Limit = 50, before: Before = None
) -> Transcript:
    """The transcript: the conversation and its latest `limit` turns, oldest first.

    Older turns come a page at a time: while the first turn shown has `seq` above 1, ask again
    with `before` set to it.
    """
    conversation, turns = conversations.get_conversation(ctx, conversation_id, limit, before)
    return Transcript.model_validate({**asdict(conversation), "turns": list(map(_shown, turns))})


@router.post(
    "/conversations/{conversation_id}/messages",
    response_model=TurnOut,
    responses=responses(409),
    openapi_extra=READ,
    dependencies=[Depends(checked_input)],
)
def send_message(
    runtime: RuntimeDep,
    principal: PrincipalDep,
    runner: Annotated[TurnRunner, Depends(get_runner)],
    conversation_id: str,
    body: MessageIn,
) -> TurnOut:
    """Send `{"text": ...}` or a button's `{"action": ...}` verbatim; answers with the turn.

    The request waits up to `BENCHGEN_AGENT_WAIT_S` seconds (60 by default); a longer turn
    answers `running`: read it at `…/turns/{turn_id}` until it is done. One turn at a time per
    conversation (409 meanwhile); a stale, replayed or altered approval is 409 too.
    """
    # A plain `def`: the framework runs it on its thread pool, so the wait never blocks the
    # event loop. The turn opens its own transactions: the claim must commit before it thinks.
    turn = runner.send(principal, conversation_id, body, runtime.settings.agent_wait_s)
    return TurnOut.model_validate(_shown(turn))


@router.get(
    "/conversations/{conversation_id}/turns/{turn_id}", response_model=TurnOut, openapi_extra=READ
)
def get_turn(ctx: ContextDep, conversation_id: str, turn_id: str) -> TurnOut:
    """One turn: poll it while its status is `running`."""
    return TurnOut.model_validate(_shown(conversations.get_turn(ctx, conversation_id, turn_id)))


def _shown(turn: TurnView) -> TurnView:
    """`turn` as a client may show it, as the web chat does: the model's words (the reply, its
    notices, button labels and the label a user chose) with their control, direction and
    invisible characters by code, so no client can be made to reorder, hide or obey them."""
    chose = turn.action is not None and turn.action.get("type") == "choose"
    return replace(
        turn,
        reply=printable(turn.reply),
        notices=[printable(notice) for notice in turn.notices],
        buttons=[{**button, "label": printable(button["label"])} for button in turn.buttons],
        user_text=printable(turn.user_text) if chose else turn.user_text,
    )
