"""The web chat: conversations, messages, approval cards, over the chat service."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response

from benchgen.services.chat import conversations
from benchgen.web.session import WebContext, csrf_checked
from benchgen.web.templating import render

router = APIRouter(dependencies=[Depends(csrf_checked)], include_in_schema=False)


@router.get("/chat", name="chat")
def chat_home(request: Request, ctx: WebContext) -> Response:
    """My conversations."""
    return render(request, "chat/list.html", conversations=conversations.list_conversations(ctx))
