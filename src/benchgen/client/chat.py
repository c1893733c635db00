"""Calls on conversations with the agent: start, send, follow a turn, read back."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, cast

from benchgen.client.connection import PAGE, Connection, segment
from benchgen.client.errors import TurnTimeout
from benchgen.client.shapes import Conversation, Transcript, Turn

TURN_RUNNING = "running"
"""The one status a chat turn leaves on its own; `wait_for_turn` returns once it has."""

# The server holds a chat message up to its agent wait (60 s by default) before answering
# `running`, so that request needs longer than the client's usual timeout.
_CHAT_TIMEOUT = 120.0


class ChatCalls(Connection):
    """Conversations with the agent and their turns."""

    def create_conversation(self, title: str = "") -> Conversation:
        """Start an empty conversation with the agent (scope `read`).

        Args:
            title: An optional title.

        Returns:
            The new conversation; pass its `id` to `send_message`.
        """
        body = {"title": title} if title else None
        return cast(Conversation, self._json("POST", "/chat/conversations", json=body))

    def list_conversations(self) -> list[Conversation]:
        """Your conversations, most recently active first (every page).

        Returns:
            The conversations, without their turns.
        """
        return cast(list[Conversation], list(self._pages("/chat/conversations", {}, PAGE)))

    def get_conversation(
        self, conversation_id: str, limit: int = 50, before: int | None = None
    ) -> Transcript:
        """A conversation's transcript, its latest turns first to come.

        Args:
            conversation_id: Its id (`conv_…`).
            limit: How many turns at most (1 to 100).
            before: Only turns numbered below this: pass the `seq` of the first turn of the
                previous answer for the turns before it (there are some while it is above 1).

        Returns:
            The conversation and its latest `limit` turns (below `before`), oldest first.
        """
        path = f"/chat/conversations/{segment(conversation_id)}"
        params: dict[str, Any] = {"limit": limit}
        if before is not None:
            params["before"] = before
        return cast(Transcript, self._json("GET", path, params=params))

    def send_message(
        self,
        conversation_id: str,
        text: str | None = None,
        action: Mapping[str, Any] | None = None,
    ) -> Turn:
        """Send typed words, or a button's `action` exactly as it came (give one of the two).

        The server waits up to its agent wait (60 s by default); a longer turn comes back
        `running`: follow it with `wait_for_turn`.

        Args:
            conversation_id: The conversation's id.
            text: What you type.
            action: A button's `action`, e.g. `turn["buttons"][0]["action"]` to approve.

        Returns:
            The turn: its status, reply, buttons and any proposal.

        Raises:
            Conflict: Another turn of this conversation is running, or the approval is stale,
                replayed or altered.
            InvalidInput: Both or neither of `text` and `action`, or a malformed action.
        """
        body: dict[str, Any] = {}
        if text is not None:
            body["text"] = text
        if action is not None:
            body["action"] = dict(action)
        path = f"/chat/conversations/{segment(conversation_id)}/messages"
        return cast(
            Turn, self._json("POST", path, json=body, timeout=max(self._timeout, _CHAT_TIMEOUT))
        )

    def get_turn(self, conversation_id: str, turn_id: str) -> Turn:
        """One turn, e.g. to see whether a `running` one is done.

        Args:
            conversation_id: The conversation's id.
            turn_id: The turn's id (`turn_id` of `send_message`'s answer).

        Returns:
            The turn as it stands.
        """
        path = f"/chat/conversations/{segment(conversation_id)}/turns/{segment(turn_id)}"
        return cast(Turn, self._json("GET", path))

    def wait_for_turn(
        self, conversation_id: str, turn_id: str, timeout_s: float = 900, poll_s: float = 1.0
    ) -> Turn:
        """Poll a turn until it is no longer `running`.

        Args:
            conversation_id: The conversation's id.
            turn_id: The turn's id.
            timeout_s: Give up after this many seconds (the server's turn cap is 900 s).
            poll_s: Seconds between polls.

        Returns:
            The turn once it has ended or waits for you.

        Raises:
            TurnTimeout: It was still running after `timeout_s`.
        """
        deadline = time.monotonic() + timeout_s
        while True:
            current = self.get_turn(conversation_id, turn_id)
            if current["status"] != TURN_RUNNING:
                return current
            left = deadline - time.monotonic()
            if left <= 0:
                raise TurnTimeout(current, timeout_s)
            time.sleep(min(poll_s, left))
