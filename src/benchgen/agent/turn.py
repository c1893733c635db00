"""One chat turn: screen the message, settle any pending proposal; once a thread takes the turn
up, mint a credential, think and act with it, revoke it — whatever happens — and record how the
turn ended."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Coroutine
from dataclasses import dataclass, field, fields
from datetime import datetime, timedelta
from typing import Any

from pydantic_ai import Agent, RunContext
from pydantic_ai.exceptions import (
    ContentFilterError,
    ModelAPIError,
    OutputTokenLimitExceeded,
    UnexpectedModelBehavior,
    UsageLimitExceeded,
)
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, UserPromptPart
from pydantic_ai.tool_manager import ToolManager
from pydantic_ai.usage import UsageLimits

from benchgen.agent import parts, replies
from benchgen.agent.brains import Brain
from benchgen.agent.credential import TurnCredential
from benchgen.agent.insight_tools import INSIGHT_TOOLS
from benchgen.agent.instructions import instructions
from benchgen.agent.lookup_tools import LOOKUP_TOOLS
from benchgen.agent.messages import Approve, Choose, Decline, MessageIn, is_assent, is_continue
from benchgen.agent.scratch_tools import SCRATCH_TOOLS
from benchgen.agent.state import Staged, TurnOver, TurnState
from benchgen.agent.tools import TOOLS
from benchgen.agent.training_tools import TRAINING_TOOLS
from benchgen.core.context import Context, Principal
from benchgen.core.errors import BenchGenError, Conflict, PermissionDenied, Unauthenticated
from benchgen.core.permissions import Action
from benchgen.core.secrets import find_secrets, split_token
from benchgen.core.statuses import TurnStatus
from benchgen.services import access, overrides
from benchgen.services.accounts import leaks, tokens
from benchgen.services.chat import conversations, proposals
from benchgen.services.chat.conversations import TurnOutcome, TurnView
from benchgen.services.runtime import Runtime, transaction

log = logging.getLogger(__name__)

# Records how turns end even when the user lost access mid-turn; it may do nothing else.
RECORDER = Principal.system("agent-harness", frozenset({Action.CHAT_RECORD}))
# The credential outlives the cap only by this much: a backstop, not a working window.
EXPIRY_MARGIN = timedelta(seconds=60)
MAX_STEPS = 25
HISTORY_TURNS = 10
# A brain's final text longer than this is cut: it is stored, shown and fed back to the brain.
MAX_REPLY_CHARS = 20_000
# How often the turn's thread looks at the clock while the brain thinks.
CAP_POLL_S = 0.05
# After the cap, how long a cancelled brain gets to stop before it is left behind.
CANCEL_GRACE_S = 1.0


@dataclass
class Claimed:
    """A turn that has been claimed, its message screened and decided: it waits for a thread."""

    runtime: Runtime
    principal: Principal
    turn: TurnView
    request: str
    approved: proposals.ProposalView | None = None
    declined: proposals.ProposalView | None = None
    continued: bool = False
    by_control: bool = False
    notices: list[str] = field(default_factory=list)
    plan: dict[str, Any] | None = None
    history: list[TurnView] = field(default_factory=list)
    waiting: bool = False  # its reply says it waits for a free thread, until the thread starts


@dataclass(kw_only=True)
class Started(Claimed):
    """A claimed turn that a thread has taken up: its cap runs and its credential is minted."""

    credential: TurnCredential
    cap_s: int  # the turn cap in force when the turn began (an admin may change it at run time)
    deadline: datetime


def claim_turn(
    runtime: Runtime, principal: Principal, conversation_id: str, message: MessageIn
) -> Claimed:
    """Everything that must happen before the request can be answered `running`.

    Runs as the user's own door: only here are proposals decided (never by the agent). Neither
    the cap nor the credential starts here: a turn may wait for a thread (see `start_turn`).

    Raises:
        Conflict: a turn is already running, or the approval is stale, replayed or altered.
        NotFound: no such conversation (or proposal) of the user's.
        InvalidInput: the message is too long, or a choice names no option.
        PermissionDenied / Unauthenticated: the caller may not chat, or the message held the
            token it was sent with (now revoked; the error says so).
    """
    screened = _screened(runtime, principal, conversation_id, message.text or "")
    _refuse_own_leak(runtime, principal, screened)
    with transaction(runtime, principal) as ctx:
        action = message.action.model_dump() if message.action else None
        text = screened.text
        if isinstance(message.action, Choose):
            # The chosen label is what the user said this turn: stored, and read by the brain.
            text = _chosen(ctx, conversation_id, message.action)
        turn = conversations.begin_turn(ctx, conversation_id, text, action)
        claimed = Claimed(runtime, principal, turn, text)
        claimed.notices = list(screened.notices)
        claimed.plan = conversations.get_plan(ctx, conversation_id)
        earlier = conversations.recent_turns(ctx, conversation_id, limit=HISTORY_TURNS + 1)
        claimed.history = [past for past in earlier if past.id != turn.id][-HISTORY_TURNS:]
        _decide(ctx, claimed, message)
    return claimed


def start_turn(claimed: Claimed) -> Started:
    """Start the turn's cap and mint its credential, on the thread that works on the turn: a
    turn that waited for a free thread still gets its whole cap, and its credential, whose
    expiry is the cap plus a short margin, does not lapse while it waits.

    Raises:
        Unauthenticated / PermissionDenied: the user's access ended while the turn waited.
    """
    runtime = claimed.runtime
    with transaction(runtime, claimed.principal) as ctx:
        cap_s = int(overrides.effective(ctx, "agent_turn_cap_s"))
        lifetime = timedelta(seconds=cap_s) + EXPIRY_MARGIN
        secret = tokens.mint_turn_credential(
            ctx, claimed.turn.id, access.agent_scopes(ctx), lifetime
        )
        deadline = ctx.now() + timedelta(seconds=cap_s)
    if claimed.waiting:
        with transaction(runtime, RECORDER) as ctx:
            conversations.note_running(ctx, claimed.turn.id, "")
    held = {f.name: getattr(claimed, f.name) for f in fields(Claimed)}
    return Started(
        **held, credential=TurnCredential(runtime, secret), cap_s=cap_s, deadline=deadline
    )


def run_turn(claimed: Claimed, brain: Brain) -> TurnView:
    """Start a claimed turn and complete it: what a thread of the pool does."""
    try:
        started = start_turn(claimed)
    except Exception as exc:
        return _give_up(claimed, exc)
    return complete_turn(started, brain)


def _give_up(claimed: Claimed, error: Exception) -> TurnView:
    """Record a turn that could not start, saying why, and release its conversation."""
    lost = isinstance(error, (Unauthenticated, PermissionDenied))
    if lost and claimed.approved is not None:
        reply = replies.not_carried_out(claimed.approved, lost_access=True, cap_s=0)
    elif lost:
        reply = replies.LOST_ACCESS
    else:
        log.error("chat turn %s could not start", claimed.turn.id, exc_info=error)
        reply = replies.INTERNAL_ERROR
    with transaction(claimed.runtime, RECORDER) as ctx:
        return conversations.finish_turn(ctx, claimed.turn.id, TurnOutcome("failed", reply))


def _screened(
    runtime: Runtime, principal: Principal, conversation_id: str, text: str
) -> leaks.Screened:
    """The message screened in its own transaction, so that a pasted token is revoked even if
    the turn is then refused (A15); one begun in the user's previous message counts too."""
    with transaction(runtime, principal, write=False) as ctx:
        earlier = conversations.last_message(ctx, conversation_id)
    if not find_secrets(text) and split_token(earlier, text) is None:
        return leaks.Screened(text)
    with transaction(runtime, principal) as ctx:
        return conversations.screen_message(ctx, conversation_id, text)


def _refuse_own_leak(runtime: Runtime, principal: Principal, screened: leaks.Screened) -> None:
    """Refuse, saying why, a message that held the very token it was sent with: that token is
    revoked now (A15), and a bare "no longer valid" would not tell the user it leaked.

    Raises:
        Unauthenticated: the message revoked the caller's own token (or the one it came from).
    """
    if not screened.notices:
        return
    with transaction(runtime, principal, write=False) as ctx:
        alive = access.live_user(ctx) is not None
    if not alive:
        raise Unauthenticated(" ".join(screened.notices))


def _decide(ctx: Context, started: Claimed, message: MessageIn) -> None:
    """Settle the pending proposal by the user's message: approve, decline, or leave none."""
    conversation_id, text = started.turn.conversation_id, started.request
    pending = proposals.pending_for(ctx, conversation_id)
    # A8: typed assent approves only what the latest reply showed (the control is refused
    # otherwise, by `decide`); a pending proposal it did not show is declined by the words.
    unseen = pending is not None and pending.id != proposals.shown_last(ctx, conversation_id)
    action = message.action
    if isinstance(action, Approve):
        started.approved = proposals.decide(
            ctx, conversation_id, action.proposal_id, action.preview_hash, True
        )
    elif isinstance(action, Decline):
        started.declined = proposals.decide(ctx, conversation_id, action.proposal_id, None, False)
        started.by_control = True
    elif isinstance(action, Choose):
        if pending is not None:
            started.declined = proposals.decide(ctx, conversation_id, pending.id, None, False)
    elif pending is not None and is_assent(text) and not unseen:
        started.approved = proposals.decide(
            ctx, conversation_id, pending.id, pending.preview_hash, True
        )
    elif is_continue(text) and started.plan is not None:
        # A18: `continue` goes on with the part-by-part plan; the part awaiting approval stays
        # pending and is shown again, never approved by the word.
        started.continued = True
    elif pending is not None:
        # Anything but assent or the approve control declines what is pending (A8).
        started.declined = proposals.decide(ctx, conversation_id, pending.id, None, False)


def _chosen(ctx: Context, conversation_id: str, action: Choose) -> str:
    """The label of the chosen option, which must belong to the question asked last."""
    latest = conversations.recent_turns(ctx, conversation_id, limit=1)
    asked = conversations.get_turn(ctx, conversation_id, action.turn_id)
    buttons = asked.buttons
    if not latest or latest[0].id != asked.id or asked.status != "awaiting_choice":
        raise Conflict("That choice answers an earlier question; choose from the latest one.")
    if action.option >= len(buttons) or buttons[action.option]["action"] != action.model_dump():
        raise Conflict("That option was not offered.", {"option": action.option})
    return str(buttons[action.option]["label"])


def complete_turn(started: Started, brain: Brain) -> TurnView:
    """Act on the turn and record it; the credential is revoked whatever happens."""
    state = _state(started, brain)
    try:
        outcome = _outcome(started, state, brain)
    except Exception:
        # Logged without arguments or messages: they may hold user data.
        log.exception("chat turn %s failed", started.turn.id)
        outcome = TurnOutcome("failed", replies.INTERNAL_ERROR)
    finally:
        _revoke(started)
    outcome.notices = [*started.notices, *state.notices, *outcome.notices]
    outcome.tool_calls = state.tool_calls
    outcome.brain = brain.name
    _hide_key(outcome, brain)
    if state.plan_changed:
        outcome.plan, outcome.plan_changed = state.plan, True
    try:
        with transaction(started.runtime, RECORDER) as ctx:
            return conversations.finish_turn(ctx, started.turn.id, outcome)
    except Exception:
        # What the turn produced could not be stored: record the turn as failed instead, so
        # its conversation is free now, not when its lease runs out, and nothing stays pending.
        log.exception("chat turn %s could not be recorded", started.turn.id)
        failed = TurnOutcome("failed", replies.INTERNAL_ERROR, brain=brain.name)
        with transaction(started.runtime, RECORDER) as ctx:
            return conversations.finish_turn(ctx, started.turn.id, failed)


def _revoke(started: Started) -> None:
    """End the turn's credential now. Should that fail (a busy database), the turn is still
    recorded, and recording it ends the credential too: it must not live on, nor the
    conversation stay locked, for want of one write."""
    try:
        started.credential.revoke()
    except Exception:
        log.exception("chat turn %s: revoking its credential failed", started.turn.id)


def _hide_key(outcome: TurnOutcome, brain: Brain) -> None:
    """Take the brain's API key out of all the turn stores and shows: the reply (a provider's
    error, or a hostile server's text), the buttons (`ask_user` options) and the tool calls."""
    outcome.reply = brain.hidden(outcome.reply)
    outcome.buttons = [b | {"label": brain.hidden(b["label"])} for b in outcome.buttons]
    outcome.tool_calls = [c | {"args": brain.hidden(c["args"])} for c in outcome.tool_calls]


def _state(started: Started, brain: Brain) -> TurnState:
    runtime = started.runtime
    state = TurnState(
        credential=started.credential,
        conversation_id=started.turn.conversation_id,
        request=started.request,
        clock=runtime.clock,
        deadline=started.deadline,
        part_size=runtime.settings.agent_part_size,
        cap_s=started.cap_s,
        plan=started.plan,
        brain_key=brain.key,
    )
    if started.declined is not None:
        state.notes.append(replies.declined_note(started.declined))
    last = started.history[-1].proposal if started.history else None
    if last is not None and last.status == "expired":
        state.notes.append(replies.expired_note(last))
        if is_assent(started.request):
            started.notices.append(replies.too_late_notice(last))
    if started.plan is not None and started.approved is None and not started.continued:
        # Any message but approving the current part or `continue` abandons the plan.
        state.plan, state.plan_changed = None, True
    return state


def _outcome(started: Started, state: TurnState, brain: Brain) -> TurnOutcome:
    if started.approved is not None:
        return _carry_out(started.approved, state)
    if started.declined is not None and started.by_control:
        reply = replies.declined_reply(started.declined)
        return TurnOutcome("completed", reply, proposal_id=started.declined.id)
    if started.continued:
        return _go_on(state)
    return _bounded(_think(started, state, brain), state)


def _go_on(state: TurnState) -> TurnOutcome:
    """`continue` in a part-by-part plan: show the part awaiting approval again, or propose
    the next unapproved part when the last one expired or the cap stopped the turn."""
    try:
        lead = parts.resume(state)
    except TurnOver:
        return _ended(state)
    if state.proposal is None:
        return TurnOutcome("completed", lead)
    return _waiting(state, state.proposal.id, replies.proposal_reply(state.proposal, lead))


def _bounded(thinking: Coroutine[Any, Any, TurnOutcome], state: TurnState) -> TurnOutcome:
    """Think on a thread of its own, and end the turn at the cap whatever the brain does.

    A hosted brain is cancelled at the cap; a brain that cannot be interrupted (an in-process
    model busy in native code) is left to finish alone: the turn is recorded and its
    conversation released now, and the brain's later tool calls meet a capped, then revoked,
    credential.
    """
    loop = asyncio.new_event_loop()
    task = loop.create_task(thinking)
    done: list[TurnOutcome] = []
    failed: list[BaseException] = []

    def think() -> None:
        try:
            done.append(loop.run_until_complete(task))
        except BaseException as exc:  # handed to the turn's own thread below
            failed.append(exc)
        finally:
            loop.close()

    thread = threading.Thread(target=think, name="benchgen-brain", daemon=True)
    thread.start()
    while thread.is_alive() and not state.over_cap():
        thread.join(min(CAP_POLL_S, state.remaining_s()))
    if thread.is_alive():
        with contextlib.suppress(RuntimeError):  # the loop closed: the brain just finished
            loop.call_soon_threadsafe(task.cancel)
        thread.join(CANCEL_GRACE_S)
        return _ended(state)
    if failed:
        raise failed[0]
    return done[0]


def _carry_out(approved: proposals.ProposalView, state: TurnState) -> TurnOutcome:
    """Run the approved proposal under the turn's own credential: every rule is checked again."""
    try:
        done = state.call("execute", {"proposal_id": approved.id}, _execute(approved.id))
    except TurnOver:
        # Stopped before it ran: access ended, or the cap passed first (the cap starts when a
        # thread takes the turn up, not while it waits). Nothing will carry the approval out
        # later, so the user hears it did not happen.
        reply = replies.not_carried_out(approved, state.lost_access, state.cap_s)
        return TurnOutcome(_ended(state).status, reply)
    if not isinstance(done, proposals.ProposalView):
        message = done["error"]["message"]
        reply = f"Approved, but it did not happen: {message}"
        return TurnOutcome("completed", reply, proposal_id=approved.id)
    reply = replies.executed_reply(done)
    try:
        lead = parts.propose_next(state, done) if state.plan is not None else None
    except TurnOver:
        # What was approved did happen: the user is told so above why the turn stopped.
        ended = _ended(state)
        return TurnOutcome(ended.status, f"{reply}\n\n{ended.reply}", proposal_id=approved.id)
    if state.proposal is not None:
        text = replies.proposal_reply(state.proposal, f"{reply}\n\n{lead}")
        return _waiting(state, state.proposal.id, text)
    text = f"{reply}\n\n{lead}" if lead else reply
    return TurnOutcome("completed", text, proposal_id=approved.id)


def _execute(
    proposal_id: str,
) -> Staged[proposals.Pending, proposals.Checked, proposals.ProposalView]:
    # Staged: a bundle change's programs run between the check and the short write that claims
    # the proposal and stores what it did, with no unit of work open.
    def check(c: Context) -> proposals.Pending:
        return proposals.check_execution(c, proposal_id)

    def store(c: Context, checked: proposals.Checked) -> proposals.ProposalView:
        return proposals.execute(c, proposal_id, checked)

    return Staged(check, proposals.Pending.inspect, store)


async def _think(started: Started, state: TurnState, brain: Brain) -> TurnOutcome:
    agent = Agent(
        brain.model,
        deps_type=TurnState,
        tools=[*TOOLS, *INSIGHT_TOOLS, *LOOKUP_TOOLS, *SCRATCH_TOOLS, *TRAINING_TOOLS],
        instructions=[instructions(started.runtime.settings), _notes],
        retries=2,
    )
    history = _history(started)
    output = ""
    try:
        # One call at a time, in the order the brain asked: run side by side, they were done
        # (and recorded in the transcript) in whichever order their threads happened to start.
        with ToolManager.parallel_execution_mode("sequential"):
            async with agent.iter(
                started.request or "(no text)",
                deps=state,
                message_history=history,
                usage_limits=UsageLimits(request_limit=MAX_STEPS),
            ) as run:
                async for _node in run:
                    # Between steps: stop once something waits for the user or the cap is hit.
                    if state.waiting or state.over_cap():
                        break
                if run.result is not None:
                    output = str(run.result.output)
    except TurnOver:
        pass
    except UsageLimitExceeded:
        return TurnOutcome("failed", replies.STEP_LIMIT)
    except asyncio.CancelledError:
        return _ended(state)
    except (ModelAPIError, ContentFilterError, OutputTokenLimitExceeded) as exc:
        # The endpoint's fault, not the tools' (an HTML page, no choices, a filtered reply):
        # these subclass UnexpectedModelBehavior, whose words below would blame the arguments.
        return _brain_failed(started, brain, exc)
    except UnexpectedModelBehavior:
        # E.g. tool arguments still invalid after the retries: the brain read each validation
        # error; the user gets the platform's words, not the loop's.
        return TurnOutcome("failed", replies.brain_misbehaved(brain.name))
    except BenchGenError:
        raise
    except Exception as exc:  # the brain itself failed: say so, never switch brains (§2.8)
        return _brain_failed(started, brain, exc)
    if state.lost_access or state.capped:
        return _ended(state)
    if state.circling is not None:
        return TurnOutcome("failed", replies.going_in_circles(state.circling))
    if state.flooding:
        return TurnOutcome("failed", replies.TOO_MANY_CALLS)
    if state.proposal is not None:
        text = replies.proposal_reply(state.proposal, state.lead)
        return _waiting(state, state.proposal.id, text)
    if state.question is not None:
        buttons = replies.choice_buttons(started.turn.id, state.options)
        return TurnOutcome("awaiting_choice" if buttons else "completed", state.question, buttons)
    if len(output) > MAX_REPLY_CHARS:
        output = output[:MAX_REPLY_CHARS] + replies.REPLY_CUT
    return TurnOutcome("completed", output or "I have nothing to add.")


def _brain_failed(started: Started, brain: Brain, error: Exception) -> TurnOutcome:
    """The turn fails saying why; the operator's log says it too, since a wrong URL or key
    fails every turn. The log holds what the user is shown, never the turn's messages."""
    reply = brain.hidden(replies.brain_failed(brain.name, error))
    log.warning("chat turn %s: %s", started.turn.id, reply)
    return TurnOutcome("failed", reply)


def _waiting(state: TurnState, proposal_id: str, reply: str) -> TurnOutcome:
    assert state.proposal is not None
    buttons = replies.proposal_buttons(state.proposal)
    return TurnOutcome("awaiting_approval", reply, buttons, proposal_id=proposal_id)


def _ended(state: TurnState) -> TurnOutcome:
    if state.lost_access:
        return TurnOutcome("failed", replies.LOST_ACCESS)
    return TurnOutcome("stopped_at_cap", replies.capped_reply(state.cap_s))


def _notes(ctx: RunContext[TurnState]) -> str:
    return "\n".join(ctx.deps.notes)


def _history(started: Started) -> list[ModelMessage]:
    """Earlier turns as plain words: what the user said and what the agent answered.

    A turn that failed or stopped at the cap has the platform's notice for its reply, not the
    agent's words: given as an answer, a small model took it up and repeated "…failed" on a
    later turn that completed."""
    messages: list[ModelMessage] = []
    for turn in started.history:
        if turn.user_text:
            messages.append(ModelRequest(parts=[UserPromptPart(turn.user_text)]))
        if turn.reply and turn.status not in _NOTICE_ONLY:
            messages.append(ModelResponse(parts=[TextPart(turn.reply)]))
    return messages


_NOTICE_ONLY = frozenset({TurnStatus.FAILED, TurnStatus.STOPPED_AT_CAP})
