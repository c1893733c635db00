"""Agent conversations and their turns, stored server-side: clients never supply history."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, or_, select, update

from benchgen.core.context import Context
from benchgen.core.errors import Conflict, NotFound, PermissionDenied, invalid
from benchgen.core.ids import new_id
from benchgen.core.permissions import Action, PrincipalKind
from benchgen.core.secret_requests import asks_for_secret
from benchgen.core.secrets import split_token
from benchgen.core.statuses import TurnStatus
from benchgen.core.storable import require_storable, storable_text
from benchgen.core.text import INVISIBLE_RUN, MAX_TITLE, require_line
from benchgen.db.session import rows_changed
from benchgen.db.tables import ChatTurn, Conversation
from benchgen.services import access, overrides
from benchgen.services.accounts import leaks, tokens
from benchgen.services.chat import proposals
from benchgen.services.keysets import Newest, newest_first
from benchgen.services.specs import check_window

MAX_MESSAGE = 100_000
# A transcript comes a page of turns at a time: a conversation may grow without end.
MAX_TURNS_PAGE = 200
# Turn numbers are 32-bit integers: a larger `before` would fail the query (SQLite overflows).
MAX_SEQ = 2**31 - 1
# A turn still marked running this long after its cap belongs to a process that died: the
# conversation is released rather than locked for ever.
STALE_MARGIN = timedelta(minutes=2)


@dataclass(frozen=True)
class ConversationView:
    """A conversation as its owner sees it."""

    id: str
    title: str
    created_at: datetime
    updated_at: datetime
    busy: bool
    turn_count: int


@dataclass(frozen=True)
class TurnView:
    """One turn: the (screened) message, how the agent answered, and what it did on the way."""

    id: str
    conversation_id: str
    seq: int
    user_text: str
    action: dict[str, Any] | None
    status: str
    reply: str
    buttons: list[dict[str, Any]]
    proposal: proposals.ProposalView | None
    tool_calls: list[dict[str, Any]]
    notices: list[str]
    brain: str
    started_at: datetime
    finished_at: datetime | None


@dataclass
class TurnOutcome:
    """How a turn ended, as the agent harness reports it to `finish_turn`."""

    status: str
    reply: str
    buttons: list[dict[str, Any]] = field(default_factory=list)
    proposal_id: str | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    brain: str = ""
    plan: dict[str, Any] | None = None
    plan_changed: bool = False


def create_conversation(ctx: Context, title: str = "") -> ConversationView:
    """Start an empty conversation owned by the acting user.

    Raises:
        PermissionDenied: the principal may not chat (no read scope, or an agent turn).
        InvalidInput: the title is too long, holds characters no database can store, or
            control, bidirectional or invisible characters that could disguise it.
    """
    user_id = _require_person(ctx)
    title = title.strip()
    if len(title) > MAX_TITLE:
        raise invalid(["title"], f"must be at most {MAX_TITLE} characters")
    require_storable(title, ["title"])
    title = require_line(title, ["title"], required=False)
    now = ctx.now()
    row = Conversation(
        id=new_id("conv"),
        user_id=user_id,
        # A token in a title is as leaked as one in a message: revoked, not only hidden.
        title=leaks.screen_text(ctx, title).text,
        created_at=now,
        updated_at=now,
    )
    ctx.session.add(row)
    ctx.session.flush()
    return _conversation_view(ctx, row)


def list_conversations(
    ctx: Context, limit: int = 50, offset: int = 0, after: Newest | None = None
) -> list[ConversationView]:
    """The acting user's conversations, most recently active first: after the one keyed `after`
    (its last activity and id) when given, then after `offset` more.

    Raises:
        PermissionDenied: the principal may not chat.
        InvalidInput: limit outside 1..200 or a negative offset.
    """
    user_id = _require_person(ctx)
    check_window(limit, offset, 200)
    query = newest_first(
        select(Conversation).where(Conversation.user_id == user_id),
        Conversation.updated_at,
        Conversation.id,
        after,
    )
    rows = ctx.session.scalars(query.limit(limit).offset(offset)).all()
    counted = (
        select(ChatTurn.conversation_id, func.count())
        .where(ChatTurn.conversation_id.in_([row.id for row in rows]))
        .group_by(ChatTurn.conversation_id)
    )
    counts: dict[str, int] = {key: int(n) for key, n in ctx.session.execute(counted)}
    return [_conversation_view(ctx, row, counts.get(row.id, 0)) for row in rows]


def get_conversation(
    ctx: Context, conversation_id: str, limit: int = 50, before: int | None = None
) -> tuple[ConversationView, list[TurnView]]:
    """A conversation with its latest `limit` turns, oldest first: those numbered below `before`
    when given (a page of older turns; the first turn is number 1, so older ones exist while the
    page's first turn is numbered above 1).

    Raises:
        PermissionDenied: the principal may not chat.
        NotFound: no such conversation, or another user's.
        InvalidInput: limit outside 1..200, or `before` outside 1..2**31-1.
    """
    row = _owned(ctx, conversation_id, _require_person(ctx))
    check_window(limit, 0, MAX_TURNS_PAGE)
    if before is not None and not 1 <= before <= MAX_SEQ:
        raise invalid(["before"], f"must be between 1 and {MAX_SEQ}")
    return _conversation_view(ctx, row), recent_turns(ctx, row.id, limit, before)


def get_turn(ctx: Context, conversation_id: str, turn_id: str) -> TurnView:
    """One turn of one of the acting user's conversations.

    Raises:
        PermissionDenied: the principal may not chat.
        NotFound: no such turn in a conversation of the user's.
    """
    row = _owned(ctx, conversation_id, _require_person(ctx))
    turn = ctx.session.get(ChatTurn, turn_id)
    if turn is None or turn.conversation_id != row.id:
        raise NotFound("No such turn in this conversation.", {"id": turn_id})
    return _turn_view(ctx, turn)


def recent_turns(
    ctx: Context, conversation_id: str, limit: int = 20, before: int | None = None
) -> list[TurnView]:
    """The conversation's latest `limit` turns (numbered below `before` when given), oldest
    first.

    Raises:
        PermissionDenied: the principal may not chat.
        NotFound: no such conversation, or another user's.
    """
    row = _owned(ctx, conversation_id, _require_user(ctx))
    query = select(ChatTurn).where(ChatTurn.conversation_id == row.id)
    if before is not None:
        query = query.where(ChatTurn.seq < before)
    query = query.order_by(ChatTurn.seq.desc()).limit(limit)
    turns = list(reversed(ctx.session.scalars(query).all()))
    # One query for every proposal the turns show, not one per turn: this runs on every turn.
    shown = proposals.views_of(ctx, [t.proposal_id for t in turns if t.proposal_id is not None])
    return [_turn_view(ctx, turn, shown) for turn in turns]


def last_message(ctx: Context, conversation_id: str) -> str:
    """What the user said last in the conversation ("" before its first turn).

    Raises:
        PermissionDenied: the principal may not chat, or is an agent turn.
        NotFound: no such conversation, or another user's.
    """
    row = _owned(ctx, conversation_id, _require_person(ctx))
    last = _last_turn(ctx, row.id)
    return last.user_text if last is not None else ""


def screen_message(ctx: Context, conversation_id: str, text: str) -> leaks.Screened:
    """A new message of the user's, screened as `leaks.screen_text` does (A15), where a BenchGen
    token begun at the end of their previous message and finished in this one counts too: it is
    revoked, and redacted in both messages before the language model reads either again.

    Raises:
        PermissionDenied: the principal may not chat, or is an agent turn.
        NotFound: no such conversation, or another user's.
    """
    row = _owned(ctx, conversation_id, _require_person(ctx))
    last = _last_turn(ctx, row.id)
    split = split_token(last.user_text, text) if last is not None else None
    if last is None or split is None:
        return leaks.screen_text(ctx, text)
    joined = leaks.screen_text(ctx, split.token)
    last.user_text = last.user_text.replace(split.head, joined.text)
    rest = leaks.screen_text(ctx, text.replace(split.tail, joined.text, 1))
    return leaks.Screened(rest.text, joined.kinds + rest.kinds, joined.notices + rest.notices)


def _last_turn(ctx: Context, conversation_id: str) -> ChatTurn | None:
    query = select(ChatTurn).where(ChatTurn.conversation_id == conversation_id)
    return ctx.session.scalar(query.order_by(ChatTurn.seq.desc()).limit(1))


def get_plan(ctx: Context, conversation_id: str) -> dict[str, Any] | None:
    """The unfinished part-by-part plan of the conversation, if any.

    Raises:
        NotFound: no such conversation, or another user's.
    """
    return _owned(ctx, conversation_id, _require_user(ctx)).plan


def begin_turn(
    ctx: Context, conversation_id: str, text: str, action: dict[str, Any] | None
) -> TurnView:
    """Claim the conversation for a new turn and store the user's message, screened.

    The message is screened again here (A15), so no door can store a pasted secret.

    Raises:
        PermissionDenied: the principal may not chat (an agent turn never starts another).
        NotFound: no such conversation, or another user's.
        InvalidInput: the message is too long or not storable.
        Conflict: another turn of this conversation is still running.
    """
    row = _owned(ctx, conversation_id, _require_person(ctx))
    if len(text) > MAX_MESSAGE:
        raise invalid(["text"], f"must be at most {MAX_MESSAGE} characters")
    require_storable(text, ["text"])
    now = ctx.now()
    _release_stale(ctx, row, now)
    turn_id = new_id("turn")
    claim = (
        update(Conversation)
        .where(Conversation.id == row.id, Conversation.active_turn_id.is_(None))
        .values(active_turn_id=turn_id, updated_at=now)
    )
    # The conditional update is the lock: of two messages sent at once only one claims it.
    if rows_changed(ctx.session, claim) != 1:
        raise Conflict(
            "The agent is still answering your previous message in this conversation; "
            "wait for it, then send this again.",
            {"conversation_id": row.id},
        )
    seq = ctx.session.scalar(
        select(func.coalesce(func.max(ChatTurn.seq), 0)).where(ChatTurn.conversation_id == row.id)
    )
    turn = ChatTurn(
        id=turn_id,
        conversation_id=row.id,
        seq=int(seq or 0) + 1,
        user_text=leaks.screen_text(ctx, text).text,
        action=action,
        status=TurnStatus.RUNNING,
        reply="",
        buttons=[],
        tool_calls=[],
        notices=[],
        brain="",
        started_at=now,
        # Alive from the claim: a process that dies before its first beat must not hold the
        # conversation until the turn's cap (15 minutes) instead of one lease.
        heartbeat_at=now,
    )
    ctx.session.add(turn)
    ctx.session.flush()
    return _turn_view(ctx, turn)


def beat_turns(ctx: Context, turn_ids: list[str]) -> None:
    """Stamp the running turns this process holds as alive (the harness's heartbeat)."""
    access.require(ctx, Action.CHAT_RECORD)
    if turn_ids:
        ctx.session.execute(
            update(ChatTurn)
            .where(ChatTurn.id.in_(turn_ids), ChatTurn.status == TurnStatus.RUNNING)
            .values(heartbeat_at=ctx.now())
            .execution_options(synchronize_session=False)
        )


def note_running(ctx: Context, turn_id: str, reply: str) -> None:
    """Say what a running turn is doing (e.g. waiting for a free agent thread), in its reply
    until it ends; an empty reply takes the note away.

    Raises:
        PermissionDenied: the principal lacks the `chat.record` grant.
    """
    access.require(ctx, Action.CHAT_RECORD)
    ctx.session.execute(
        update(ChatTurn)
        .where(ChatTurn.id == turn_id, ChatTurn.status == TurnStatus.RUNNING)
        .values(reply=reply)
        .execution_options(synchronize_session=False)
    )


def _is_alive(ctx: Context, turn: ChatTurn, now: datetime) -> bool:
    """A turn whose process beats within the lease (a row from before heartbeats were kept,
    never stamped: within its cap)."""
    if turn.heartbeat_at is not None:
        return turn.heartbeat_at + timedelta(seconds=ctx.settings.agent_turn_lease_s) > now
    cap = timedelta(seconds=overrides.effective(ctx, "agent_turn_cap_s"))
    return turn.started_at + cap + STALE_MARGIN > now


def _release_stale(ctx: Context, row: Conversation, now: datetime) -> None:
    if row.active_turn_id is None:
        return
    turn = ctx.session.get(ChatTurn, row.active_turn_id)
    if turn is not None and _is_alive(ctx, turn, now):
        return
    if turn is not None and turn.status == TurnStatus.RUNNING:
        turn.status, turn.finished_at = TurnStatus.FAILED, now
        turn.reply = "This turn was cut off: the server stopped while it ran. Nothing is pending."
        proposals.settle_turn(ctx, turn.id, None)
        # Its process may only have stalled: the turn's agent must not act on beside the next.
        tokens.revoke_turn_credentials(ctx, row.user_id, turn.id)
    ctx.session.execute(
        update(Conversation)
        .where(Conversation.id == row.id, Conversation.active_turn_id == row.active_turn_id)
        .values(active_turn_id=None)
        .execution_options(synchronize_session=False)
    )


def finish_turn(ctx: Context, turn_id: str, outcome: TurnOutcome) -> TurnView:
    """Record how a turn ended and release its conversation.

    Runs as the harness's system principal, so a turn whose user lost access mid-turn is still
    recorded and released. The reply, button labels and notices pass the secrets filter
    once more: secrets redacted, live BenchGen tokens revoked (A15), and a reply asking for a
    token or password withheld (A14). The turn's credential is revoked. A turn already cut off
    (see `_release_stale`) stays as recorded then, and its drafts are cancelled.

    Raises:
        PermissionDenied: the principal lacks the `chat.record` grant.
        NotFound: no such turn.
        InvalidInput: an unknown status.
    """
    access.require(ctx, Action.CHAT_RECORD)
    if outcome.status not in set(TurnStatus):
        raise invalid(["status"], f"must be one of {', '.join(TurnStatus)}")
    turn = ctx.session.get(ChatTurn, turn_id)
    if turn is None:
        raise NotFound("No such turn.", {"id": turn_id})
    if outcome.status != TurnStatus.RUNNING:
        # Dead when the turn ends (A2), even if the harness's own revoke did not go through.
        owner = ctx.session.get_one(Conversation, turn.conversation_id).user_id
        tokens.revoke_turn_credentials(ctx, owner, turn.id)
    if turn.status != TurnStatus.RUNNING:
        # Cut off while it ran (its lease lapsed; a later turn may have begun): it stays cut
        # off, and nothing it proposed since can be decided.
        proposals.settle_turn(ctx, turn.id, None)
        return _turn_view(ctx, turn)
    now = ctx.now()
    previous = _previous_reply(ctx, turn)
    turn.reply, turn.buttons, turn.notices, withheld = _screened(ctx, outcome, previous)
    # A withheld reply asks nothing: the user never saw its question or its preview, so no
    # option of it can be chosen and no proposal of it approved. The turn is simply over.
    asking = outcome.status in (TurnStatus.AWAITING_CHOICE, TurnStatus.AWAITING_APPROVAL)
    ended = withheld and asking
    turn.status = TurnStatus.COMPLETED if ended else outcome.status
    turn.proposal_id = None if ended else outcome.proposal_id
    if ended and outcome.proposal_id:
        turn.reply += " What it proposed was cancelled: nothing of it will happen."
    turn.tool_calls = outcome.tool_calls
    turn.brain = outcome.brain
    turn.finished_at = None if outcome.status == TurnStatus.RUNNING else now
    if outcome.status != TurnStatus.RUNNING:
        shown = turn.proposal_id if turn.status == TurnStatus.AWAITING_APPROVAL else None
        proposals.settle_turn(ctx, turn.id, shown)
    values: dict[str, Any] = {"updated_at": now}
    if outcome.status != TurnStatus.RUNNING:
        values["active_turn_id"] = None
    if outcome.plan_changed:
        values["plan"] = outcome.plan
    ctx.session.execute(
        update(Conversation)
        .where(
            Conversation.id == turn.conversation_id,
            or_(Conversation.active_turn_id == turn.id, Conversation.active_turn_id.is_(None)),
        )
        .values(**values)
        .execution_options(synchronize_session=False)
    )
    return _turn_view(ctx, turn)


def _screened(
    ctx: Context, outcome: TurnOutcome, previous: str = ""
) -> tuple[str, list[dict[str, Any]], list[str], bool]:
    """The reply, button labels and notices as they may be stored and shown (A14, A15), and
    whether the reply was withheld.

    Secrets are redacted and live BenchGen tokens revoked wherever they appear, and a reply that
    asks for a token or password is withheld with its buttons: asked in its own words, in a
    label, or begun at the end of the `previous` reply of the conversation ("Please paste
    your", then "API token here."). In the preview of the turn's proposal, only a request
    counts, not a question its benchmark asks (see `leaks.screen_reply`). This runs as the
    harness's recorder, which holds only `chat.record`: revoking a leaked token needs no grant
    (see `leaks.screen_text`).
    """
    # A model may answer with a NUL or half a surrogate pair, which no database stores.
    preview = _preview_text(ctx, outcome.proposal_id)
    reply = leaks.screen_reply(ctx, storable_text(outcome.reply), preview)
    # Labels may be the model's words (ask_user options): they pass the same filter.
    said = [storable_text(b["label"]) for b in outcome.buttons]
    labels = leaks.screen_value(ctx, said, leaks.Origin.REPLY)
    told = [storable_text(notice) for notice in outcome.notices]
    notices = leaks.screen_value(ctx, told, leaks.Origin.REPLY)
    buttons = [
        {**b, "label": label} for b, label in zip(outcome.buttons, labels.value, strict=True)
    ]
    revoked = [*reply.notices, *labels.notices, *notices.notices]
    # Each seam where one text of the model's follows another: a request split across it asks
    # as a whole one does, though neither half asks alone. The preview is the platform's, and
    # its questions no request (above): it is no part of a seam.
    own = reply.text.replace(preview, "\n") if preview else reply.text
    seams = [(previous, own)] + [(own, label) for label in labels.value]
    if not reply.withheld and any(_asks_across(before, after) for before, after in seams):
        return leaks.withheld_notice(ctx), [], [*notices.value, *revoked], True
    if any(asks_for_secret(label) for label in labels.value):
        # A button that asks for a token withholds the reply as a request in the text would.
        return leaks.withheld_notice(ctx), [], [*notices.value, *revoked], True
    if reply.withheld:  # what the buttons answer or approve was in what went
        return reply.text, [], [*notices.value, *revoked], True
    if any(_runs_downloaded(text) for text in (own, *labels.value)):
        return DOWNLOAD_WITHHELD, [], [*notices.value, *revoked], True
    return reply.text, buttons, [*notices.value, *revoked], False


# A program fetched from the internet and run at once ("curl … | sh", "sh -c "$(curl …)"",
# "iex (iwr …)", an encoded PowerShell command): the agent acts through the platform and never
# needs the user to run anything, so a reply that asks it is an injected or confused model's.
_DOWNLOAD_RUN = re.compile(
    r"\b(?:curl|wget|iwr|irm|invoke-webrequest|invoke-restmethod)\b[^\n|]{0,300}\|\s*"
    r"(?:sudo\s+)?(?:(?:ba|z|da|k|fi)?sh|iex|powershell|pwsh)\b|"
    r"\b(?:ba|z)?sh\s+(?:-c\s+[\"']?\$\(|<\(|<<<\s*[\"']?\$\()\s*(?:curl|wget)\b|"
    r"\biex\s*\(\s*(?:iwr|irm|invoke-webrequest|invoke-restmethod|new-object)\b|"
    r"\b(?:powershell|pwsh)(?:\.exe)?\b[^\n]{0,100}\s-e(?:nc?|ncodedcommand)?\s",
    re.IGNORECASE,
)
DOWNLOAD_WITHHELD = (
    "This reply was withheld because it asked you to run a program fetched from the internet. "
    "BenchGen's agent never needs you to run anything: it acts through the platform, and "
    "whatever it proposes waits for your approval here."
)


def _runs_downloaded(text: str) -> bool:
    """Whether `text` asks its reader to fetch a program and run it (see `_DOWNLOAD_RUN`)."""
    return _DOWNLOAD_RUN.search(INVISIBLE_RUN.sub("", text)) is not None


# How much of each side of a seam is read: a request split across it is one sentence.
SEAM = 300


def _asks_across(before: str, after: str) -> bool:
    """A request that only the two texts together make. One that is whole on a side is that
    side's: its own check has ruled on it (the end of a quiz's preview may hold "what is the
    password?", which the next reply does not ask)."""
    before, after = before[-SEAM:], after[:SEAM]
    if not (before and after) or asks_for_secret(before) or asks_for_secret(after):
        return False
    return asks_for_secret(f"{before} {after}")


def _preview_text(ctx: Context, proposal_id: str | None) -> str:
    """The preview the platform rendered for the turn's proposal ("" for none)."""
    shown = proposals.views_of(ctx, [proposal_id]).get(proposal_id) if proposal_id else None
    return str(shown.preview.get("text", "")) if shown is not None else ""


def _previous_reply(ctx: Context, turn: ChatTurn) -> str:
    """What the agent said, as shown, in the turn before `turn` ("" for the first turn)."""
    query = select(ChatTurn.reply).where(
        ChatTurn.conversation_id == turn.conversation_id, ChatTurn.seq < turn.seq
    )
    return ctx.session.scalar(query.order_by(ChatTurn.seq.desc()).limit(1)) or ""


def _require_person(ctx: Context) -> str:
    # An agent turn never opens or drives a conversation: it only answers inside one.
    if ctx.principal.kind is PrincipalKind.AGENT:
        raise PermissionDenied("An agent turn cannot start or drive a conversation.")
    return _require_user(ctx)


def _require_user(ctx: Context) -> str:
    access.require(ctx, Action.CHAT_USE)
    user_id = ctx.principal.user_id
    assert user_id is not None  # chat.use is granted to users only
    return user_id


def _owned(ctx: Context, conversation_id: str, user_id: str) -> Conversation:
    row = ctx.session.get(Conversation, conversation_id, populate_existing=True)
    if row is None or row.user_id != user_id:
        raise NotFound("No such conversation.", {"id": conversation_id})
    return row


def _conversation_view(
    ctx: Context, row: Conversation, count: int | None = None
) -> ConversationView:
    if count is None:
        count = ctx.session.scalar(select(func.count()).where(ChatTurn.conversation_id == row.id))
    busy = row.active_turn_id is not None
    return ConversationView(row.id, row.title, row.created_at, row.updated_at, busy, count or 0)


def _turn_view(
    ctx: Context, turn: ChatTurn, shown: dict[str, proposals.ProposalView] | None = None
) -> TurnView:
    if shown is None and turn.proposal_id is not None:
        shown = proposals.views_of(ctx, [turn.proposal_id])
    proposal = (shown or {}).get(turn.proposal_id) if turn.proposal_id is not None else None
    return TurnView(
        id=turn.id,
        conversation_id=turn.conversation_id,
        seq=turn.seq,
        user_text=turn.user_text,
        action=turn.action,
        status=turn.status,
        reply=turn.reply,
        buttons=list(turn.buttons),
        proposal=proposal,
        tool_calls=list(turn.tool_calls),
        notices=list(turn.notices),
        brain=turn.brain,
        started_at=turn.started_at,
        finished_at=turn.finished_at,
    )
