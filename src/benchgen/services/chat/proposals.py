"""Bound approvals: the agent proposes, the user approves those exact arguments, they run once."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Row, Select, select, update
from sqlalchemy.exc import IntegrityError

from benchgen.core.context import Context
from benchgen.core.errors import (
    BenchGenError,
    Conflict,
    NotFound,
    PermissionDenied,
    Unauthenticated,
    invalid,
)
from benchgen.core.ids import new_id
from benchgen.core.permissions import Action, PrincipalKind
from benchgen.core.secrets import find_secrets
from benchgen.core.statuses import ProposalStatus, TurnStatus
from benchgen.db.session import rows_changed
from benchgen.db.tables import ChatTurn, Proposal
from benchgen.services import access, audit
from benchgen.services.benchmarks import _bundle_versions, bundles
from benchgen.services.chat import _proposal_kinds

EXPIRY = timedelta(minutes=10)
# Checking and storing around a bundle's programs: what may pass beyond their own budget.
BUDGET_MARGIN_S = 60
# A proposal is a `draft` while the turn that made it runs; only when that turn ends showing its
# preview does it become `pending`, the one state a user can decide. A turn that fails, stops
# at the cap or shows no preview cancels its drafts, so nothing unseen can be approved.
MAX_CONVERSATION_ID = 40

# Why a proposal can no longer be decided or carried out, by its status.
_GONE: dict[str, str] = {
    ProposalStatus.DRAFT: "it was never shown to you",
    ProposalStatus.CANCELLED: "the turn that made it ended without showing it to you",
    ProposalStatus.APPROVED: "it was already approved",
    ProposalStatus.DECLINED: "it was declined",
    ProposalStatus.EXPIRED: "it expired; ask the agent to propose it again",
    ProposalStatus.SUPERSEDED: "a newer proposal in this conversation replaced it",
    ProposalStatus.EXECUTED: "it was already carried out",
    ProposalStatus.FAILED: "it was already tried, and it failed",
}


@dataclass(frozen=True)
class ProposalView:
    """A proposal as its user (and their agent) sees it.

    `preview_hash` is the SHA-256 of the canonical arguments: approving sends it back. `status`
    reads `expired` once the deadline has passed. `error_code` is set when execution failed.
    """

    id: str
    conversation_id: str
    kind: str
    arguments: dict[str, Any]
    preview_hash: str
    preview: dict[str, Any]
    status: str
    created_at: datetime
    expires_at: datetime
    decided_at: datetime | None
    result: dict[str, Any] | None
    error: str
    error_code: str | None


@dataclass(frozen=True)
class Checked:
    """What a proposal's slow work found with no unit of work open: its changed bundle
    unpacked, validated and with its solutions scored (None for kinds with nothing slow), or
    the refusal met on the way, which the write that follows raises (carrying out, records as
    the proposal's failure). `began_at`: when carrying it out was checked."""

    bundle: bundles.Checked | None = None
    refused: BenchGenError | None = None
    began_at: datetime | None = None

    def ran(self) -> bundles.Checked | None:
        """The inspected bundle, if any.

        Raises:
            BenchGenError: the refusal met while checking or inspecting it.
        """
        if self.refused is not None:
            raise self.refused
        return self.bundle


@dataclass(frozen=True)
class Pending:
    """A proposal past the checks that come before its slow work, made in a unit of work that
    only reads (`check_proposal`, `check_execution`); `inspect` does that work."""

    bundle: bundles.BundleCheck | None = None
    refused: BenchGenError | None = None
    began_at: datetime | None = None

    def inspect(self) -> Checked:
        """Run the slow work, if any: a changed bundle's programs, in the sandbox. Call it with
        no unit of work open: on SQLite a write transaction would block every other write for
        as long as they run. A domain error is kept in the result, not raised."""
        if self.bundle is None:
            return Checked(refused=self.refused, began_at=self.began_at)
        try:
            return Checked(self.bundle.inspect(), began_at=self.began_at)
        except BenchGenError as exc:
            return Checked(refused=exc, began_at=self.began_at)


def check_proposal(
    ctx: Context, conversation_id: str, kind: str, arguments: dict[str, Any]
) -> Pending:
    """The checks of `propose` that come before its slow work, in a unit of work that only
    reads. The harness then calls `Pending.inspect` with no unit of work open (a changed
    bundle's programs run there, for seconds to minutes: on SQLite a write transaction would
    block every other write meanwhile), and `propose` with what it found, in a short write.

    Raises:
        PermissionDenied: not an agent turn, another conversation than the turn's, or the
            agent may not do this now.
        Unauthenticated: the account or turn credential is no longer valid.
        InvalidInput: unknown kind, bad arguments or conversation id.
        NotFound: the benchmark, conversation or scratch copy is not visible.
        Conflict: the scratch copy is the same as the current bundle.
    """
    _require_agent(ctx)
    _require_conversation_id(conversation_id)
    _require_turns_conversation(ctx, conversation_id)
    return Pending(_proposal_kinds.check(ctx, kind, arguments))


def propose(
    ctx: Context,
    conversation_id: str,
    kind: str,
    arguments: dict[str, Any],
    *,
    agent_pick: bool = False,
    checked: Checked | None = None,
) -> ProposalView:
    """Validate an action the agent wants to take and store it, pending the user's decision.

    The arguments are checked by the services' own validation (nothing is applied), turned
    into their canonical form and hashed; the preview is rendered from them by code. It is
    stored as a draft that nobody can decide until `settle_turn` records that its turn showed
    it. Any open proposal of the conversation is superseded. `agent_pick` (runs only) marks a model
    the agent chose because the user's message left the choice open. A bundle change needs
    `checked`, from `check_proposal` and `Pending.inspect`: its programs never run here.

    Raises:
        PermissionDenied: not an agent turn, another conversation than the turn's, or the
            agent may not do this now.
        Unauthenticated: the account or turn credential is no longer valid.
        InvalidInput: unknown kind (A13 actions have none), bad arguments or conversation id.
        NotFound: the benchmark, model or dataset is not visible to the principal.
        Frozen: an edit touches frozen questions.
        Conflict: the edit changes nothing, the benchmark is already published, the scratch
            copy changed while its programs ran, or another proposal of this conversation was
            made at the same moment.
        InsufficientCredits: a training plan the balance cannot cover.
        BenchGenError: the refusal `checked` carries (what inspecting the bundle met).
        ValueError: a bundle change without `checked` (a bug in the caller).
    """
    user_id = _require_agent(ctx)
    _require_conversation_id(conversation_id)
    _require_turns_conversation(ctx, conversation_id)
    bundle = checked.ran() if checked is not None else None
    prepared = _proposal_kinds.prepare(ctx, kind, arguments, agent_pick, bundle)
    _refuse_secrets(prepared)
    now = ctx.now()
    _retire_pending(ctx, user_id, conversation_id, now)
    row = Proposal(
        id=new_id("prop"),
        user_id=user_id,
        conversation_id=conversation_id,
        kind=kind,
        arguments=prepared.arguments,
        arguments_hash=_proposal_kinds.hash_arguments(prepared.arguments),
        preview=prepared.preview,
        status=ProposalStatus.DRAFT,
        created_at=now,
        expires_at=now + EXPIRY,
        error="",
        created_by_turn=ctx.principal.turn_id,
    )
    _insert_open(ctx, row)
    details = {"kind": kind, "conversation_id": conversation_id, "hash": row.arguments_hash}
    audit.record(ctx, audit.AuditAction.PROPOSAL_CREATE, "proposal", row.id, **details)
    return _view(row, now)


def _require_conversation_id(conversation_id: str) -> None:
    if not 1 <= len(conversation_id) <= MAX_CONVERSATION_ID:
        raise invalid(["conversation_id"], f"must be 1 to {MAX_CONVERSATION_ID} characters")


def _require_turns_conversation(ctx: Context, conversation_id: str) -> None:
    """A turn proposes only in the conversation it answers (A8): one made elsewhere would
    supersede what waits there, and wait there for a "yes" though it was shown, if at all,
    in another chat (the user's own other one, or someone else's).

    Raises:
        PermissionDenied: the turn's credential names another conversation.
    """
    # Every turn credential is minted beside its recorded turn; one whose turn was never
    # recorded is no chat's (a script's), and has no conversation to keep to.
    turn = ctx.session.get(ChatTurn, ctx.principal.turn_id) if ctx.principal.turn_id else None
    if turn is not None and turn.conversation_id != conversation_id:
        raise PermissionDenied(
            f"This turn answers in conversation {turn.conversation_id}: it cannot propose in "
            "another conversation. Nothing was proposed."
        )


def _refuse_secrets(prepared: _proposal_kinds.Prepared) -> None:
    """A proposal never carries a secret (A14, A15): its preview is shown to the user as it
    stands, and redacting it would show something other than what runs (A7).

    Raises:
        InvalidInput: the arguments, or the preview rendered from them, hold a key or token.
    """
    shown = _proposal_kinds.canonical_json(
        {"arguments": prepared.arguments, "preview": prepared.preview}
    )
    found = dict.fromkeys(finding.kind.label for finding in find_secrets(shown))
    if found:
        raise invalid(
            ["arguments"],
            f"hold a secret ({', '.join(found)}); a proposal never carries one: leave it out",
        )


def _insert_open(ctx: Context, row: Proposal) -> None:
    # The unique index on open proposals decides races the supersede cannot see (a concurrent
    # transaction's uncommitted draft): the loser is refused, never a second open proposal.
    try:
        with ctx.session.begin_nested():
            ctx.session.add(row)
            ctx.session.flush()
    except IntegrityError:
        raise Conflict(
            "Another proposal of this conversation was made at the same moment; "
            "only one can wait for the user."
        ) from None


def _retire_pending(ctx: Context, user_id: str, conversation_id: str, now: datetime) -> None:
    """Expire or supersede the conversation's open proposals: only the newest is decidable."""
    pending = update(Proposal).where(
        Proposal.user_id == user_id,
        Proposal.conversation_id == conversation_id,
        Proposal.status.in_((ProposalStatus.DRAFT, ProposalStatus.PENDING)),
    )
    ctx.session.execute(
        pending.where(Proposal.expires_at <= now).values(status=ProposalStatus.EXPIRED)
    )
    ctx.session.execute(
        pending.where(Proposal.expires_at > now).values(
            status=ProposalStatus.SUPERSEDED, decided_at=now
        )
    )


def settle_turn(ctx: Context, turn_id: str, shown_id: str | None) -> None:
    """Record how a turn ended for its proposals: the one it showed becomes decidable, every
    other draft it made is cancelled.

    Called by the chat record as its system principal, or by the user whose turn was cut off.

    Raises:
        PermissionDenied: neither the chat recorder nor a user.
    """
    drafts = update(Proposal).where(
        Proposal.created_by_turn == turn_id, Proposal.status == ProposalStatus.DRAFT
    )
    if not access.can(ctx, Action.CHAT_RECORD):
        # A user settling a cut-off turn touches only their own proposals.
        drafts = drafts.where(Proposal.user_id == _require_user(ctx))
    drafts = drafts.execution_options(synchronize_session=False)
    if shown_id is not None:
        ctx.session.execute(
            drafts.where(Proposal.id == shown_id).values(status=ProposalStatus.PENDING)
        )
    ctx.session.execute(drafts.values(status=ProposalStatus.CANCELLED, decided_at=ctx.now()))


UNSEEN = (
    "Not approved, and nothing will run: the latest reply in this conversation did not show "
    "this proposal. Reply `continue` to see it again, or ask for something else."
)


def shown_last(ctx: Context, conversation_id: str) -> str | None:
    """The proposal the conversation's latest reply showed for the user to decide, if any: the
    only one that may be approved (A8). A pending proposal it did not show (a `continue` that
    stopped before showing its part again) waits to be shown again."""
    return _shown(ctx.session.execute(_latest_reply(conversation_id)).first())


def _shown(latest: Row[str, str | None] | None) -> str | None:
    if latest is None:
        return None
    status, proposal_id = latest
    return proposal_id if status == TurnStatus.AWAITING_APPROVAL else None


def _latest_reply(conversation_id: str) -> Select[str, str | None]:
    return (
        select(ChatTurn.status, ChatTurn.proposal_id)
        .where(ChatTurn.conversation_id == conversation_id, ChatTurn.status != TurnStatus.RUNNING)
        .order_by(ChatTurn.seq.desc())
        .limit(1)
    )


def decide(
    ctx: Context, conversation_id: str, proposal_id: str, preview_hash: str | None, approve: bool
) -> ProposalView:
    """Approve or decline the pending proposal, in one conditional update.

    Approving needs the preview hash that was shown with the proposal; declining does not.
    Only a person's own door decides: the agent's credential never approves (A11).

    Raises:
        PermissionDenied: an agent turn tried to decide.
        Unauthenticated: the account or credential is no longer valid.
        InvalidInput: approving without a preview hash.
        Conflict: not decided, and nothing will run: the proposal is not the pending one of this
            conversation and user, it expired, was replaced or already decided, or the hash
            does not match.
    """
    if ctx.principal.kind is PrincipalKind.AGENT:
        # A11: nothing the model says can approve; only the user's own input decides.
        raise PermissionDenied("The agent cannot decide its own proposals; the user does.")
    user_id = _require_user(ctx)
    if approve and not preview_hash:
        raise invalid(["preview_hash"], "approving needs the preview hash shown with the proposal")
    now = ctx.now()
    status = ProposalStatus.APPROVED if approve else ProposalStatus.DECLINED
    statement = update(Proposal).where(
        Proposal.id == proposal_id,
        Proposal.conversation_id == conversation_id,
        Proposal.user_id == user_id,
        Proposal.status == ProposalStatus.PENDING,
        Proposal.expires_at > now,
    )
    if approve:
        statement = statement.where(Proposal.arguments_hash == preview_hash)
    if rows_changed(ctx.session, statement.values(status=status, decided_at=now)) != 1:
        reason = _why_not(ctx, proposal_id, user_id, conversation_id, now)
        verb = "Not approved, and nothing will run" if approve else "Not declined"
        raise Conflict(f"{verb}: {reason}.", {"id": proposal_id})
    if approve:
        # Checked once the proposal is known to be the pending one (the refusals above say
        # more); raising rolls the approval back with the caller's unit of work.
        latest = ctx.session.execute(_latest_reply(conversation_id)).first()
        # A conversation with no reply holds only a service call's proposals, never a chat's.
        if latest is not None and _shown(latest) != proposal_id:
            raise Conflict(UNSEEN, {"id": proposal_id})
    row = _owned(ctx, proposal_id, user_id)
    audit.record(
        ctx,
        audit.AuditAction.PROPOSAL_APPROVE if approve else audit.AuditAction.PROPOSAL_DECLINE,
        "proposal",
        row.id,
        kind=row.kind,
    )
    return _view(row, now)


def _why_not(
    ctx: Context, proposal_id: str, user_id: str, conversation_id: str, now: datetime
) -> str:
    row = ctx.session.get(Proposal, proposal_id)
    # Someone else's proposal, or one from another chat, is reported as absent: its state is
    # none of this caller's business.
    if row is None or row.user_id != user_id or row.conversation_id != conversation_id:
        return "there is no such proposal in this conversation"
    status = _status(row, now)
    if status == ProposalStatus.PENDING:
        return "the preview hash does not match the proposal that was shown"
    return _GONE[status]


def check_execution(ctx: Context, proposal_id: str) -> Pending:
    """The checks of `execute` that come before its slow work, in a unit of work that only
    reads: nothing runs for a proposal that cannot be carried out. The harness then calls
    `Pending.inspect` with no unit of work open (a changed bundle's programs) and `execute`
    with what it found, in a short write that claims the proposal and checks every rule again.
    A refusal of the kind's own checks is not raised: `execute` records it as the failure.

    Raises:
        PermissionDenied: not an agent turn.
        Unauthenticated: the account or turn credential is no longer valid.
        NotFound: no such proposal for this user.
        Conflict: never approved, declined, expired, or already carried out.
    """
    user_id = _require_agent(ctx)
    row = _owned(ctx, proposal_id, user_id)
    now = ctx.now()
    status = _status(row, now)
    if status != ProposalStatus.APPROVED:
        reason = _GONE.get(status, "it was never approved")
        raise Conflict(f"Not carried out: {reason}.", {"id": row.id})
    try:
        _require_bound(row)
        return Pending(_proposal_kinds.check_perform(ctx, row.kind, row.arguments), began_at=now)
    except BenchGenError as exc:
        return Pending(refused=exc, began_at=now)


def execute(ctx: Context, proposal_id: str, checked: Checked | None = None) -> ProposalView:
    """Carry out an approved proposal, once, with exactly its stored arguments.

    The agent turn's principal runs the normal service function, so every rule is checked
    again now. A domain error does not propagate: the proposal is marked `failed` with the
    error's message and code, whatever the service did is rolled back (a savepoint), and the
    view is returned — so the caller's transaction commits the failure record. Any other
    exception propagates and leaves the proposal approved (nothing is committed). A bundle
    change needs `checked`, from `check_execution` and `Pending.inspect`: its programs never
    run here (a refusal it carries is recorded as the failure).

    Raises:
        PermissionDenied: not an agent turn (another door would skip the agent's limits).
        Unauthenticated: the account or turn credential is no longer valid.
        NotFound: no such proposal for this user.
        Conflict: not carried out: never approved, declined, expired, or already carried out.
        ValueError: a bundle change without `checked` (a bug in the caller; nothing is
            committed).
    """
    user_id = _require_agent(ctx)
    row = _owned(ctx, proposal_id, user_id)
    now = ctx.now()
    began = _began(ctx, checked, now)
    claim = update(Proposal).where(
        Proposal.id == row.id,
        Proposal.user_id == user_id,
        Proposal.status == ProposalStatus.APPROVED,
        Proposal.expires_at > began,
    )
    # The conditional update is the claim: of two concurrent executions only one matches.
    if rows_changed(ctx.session, claim.values(status=ProposalStatus.EXECUTED)) != 1:
        ctx.session.refresh(row)  # a concurrent execution may have committed since the load
        reason = _GONE.get(_status(row, began), "it was never approved")
        raise Conflict(f"Not carried out: {reason}.", {"id": row.id})
    _carry_out(ctx, row, checked)
    details = {"kind": row.kind, "status": row.status, "error": row.error}
    audit.record(ctx, audit.AuditAction.PROPOSAL_EXECUTE, "proposal", row.id, **details)
    return _view(row, now)


def _began(ctx: Context, checked: Checked | None, now: datetime) -> datetime:
    """When carrying out began, by which the deadline is judged: a bundle's programs, run since
    `check_execution`, may outlast the deadline of a proposal approved in time. Never earlier
    than their whole time budget ago, whatever `checked` says."""
    if checked is None or checked.began_at is None:
        return now
    budget = _bundle_versions.solutions_budget_s(ctx.settings) + BUDGET_MARGIN_S
    return max(checked.began_at, now - timedelta(seconds=budget))


def _carry_out(ctx: Context, row: Proposal, checked: Checked | None) -> None:
    try:
        _require_bound(row)
        bundle = checked.ran() if checked is not None else None
        with ctx.session.begin_nested():
            result = _proposal_kinds.perform(ctx, row.kind, row.arguments, bundle)
    except BenchGenError as exc:
        row.status, row.error = ProposalStatus.FAILED, exc.message
        row.result = {"code": exc.code, "details": exc.details}
        return
    row.status, row.result = ProposalStatus.EXECUTED, result


def _require_bound(row: Proposal) -> None:
    # Defence in depth: the stored arguments must still be the ones whose hash was approved.
    if _proposal_kinds.hash_arguments(row.arguments) != row.arguments_hash:
        raise Conflict("The stored arguments no longer match what was approved.")


def requested(arguments: dict[str, Any]) -> dict[str, Any]:
    """A create or edit proposal's arguments as they were asked for, without what an edit's
    preview bound beside them (the version, the values shown as before): proposed again, they
    are previewed and bound afresh, since the kind refuses them as input."""
    return {k: v for k, v in arguments.items() if k not in _proposal_kinds.EDIT_BOUND}


def pending_for(ctx: Context, conversation_id: str) -> ProposalView | None:
    """The conversation's proposal awaiting the user's decision, if any (and not expired).

    Raises:
        Unauthenticated: the account or credential is no longer valid.
    """
    user_id = _require_user(ctx)
    now = ctx.now()
    row = ctx.session.scalars(
        select(Proposal)
        .where(
            Proposal.user_id == user_id,
            Proposal.conversation_id == conversation_id,
            Proposal.status == ProposalStatus.PENDING,
            Proposal.expires_at > now,
        )
        .order_by(Proposal.created_at.desc(), Proposal.id)
        .limit(1)
    ).first()
    return _view(row, now) if row is not None else None


def views_of(ctx: Context, proposal_ids: list[str]) -> dict[str, ProposalView]:
    """Proposals' views by id, for a service that has already checked the caller owns their
    conversation (the chat transcript); it checks nothing itself."""
    if not proposal_ids:
        return {}
    now = ctx.now()
    rows = ctx.session.scalars(
        select(Proposal)
        .where(Proposal.id.in_(proposal_ids))
        .execution_options(populate_existing=True)
    )
    return {row.id: _view(row, now) for row in rows}


def get_proposal(ctx: Context, proposal_id: str) -> ProposalView:
    """One of the acting user's proposals.

    Raises:
        Unauthenticated: the account or credential is no longer valid.
        NotFound: no such proposal, or another user's.
    """
    return _view(_owned(ctx, proposal_id, _require_user(ctx)), ctx.now())


def _require_agent(ctx: Context) -> str:
    # Proposals are the agent's way to ask first. Executing one from another door would run it
    # without the agent's switches and rate limits: approval would widen access.
    if ctx.principal.kind is not PrincipalKind.AGENT:
        raise PermissionDenied(
            "Only the agent makes and carries out proposals; other doors act directly."
        )
    return _require_user(ctx)


def _require_user(ctx: Context) -> str:
    user = access.live_user(ctx)
    if user is None:
        raise Unauthenticated("The account is disabled or the credential is no longer valid.")
    return user.id


def _owned(ctx: Context, proposal_id: str, user_id: str) -> Proposal:
    row = ctx.session.get(Proposal, proposal_id, populate_existing=True)
    if row is None or row.user_id != user_id:
        raise NotFound("No such proposal.", {"id": proposal_id})
    return row


def _status(row: Proposal, now: datetime) -> str:
    """The status in force: an undecided or unexecuted proposal past its deadline is expired."""
    if (
        row.status in (ProposalStatus.DRAFT, ProposalStatus.PENDING, ProposalStatus.APPROVED)
        and row.expires_at <= now
    ):
        return ProposalStatus.EXPIRED
    return row.status


def _view(row: Proposal, now: datetime) -> ProposalView:
    return ProposalView(
        id=row.id,
        conversation_id=row.conversation_id,
        kind=row.kind,
        arguments=row.arguments,
        preview_hash=row.arguments_hash,
        preview=row.preview,
        status=_status(row, now),
        created_at=row.created_at,
        expires_at=row.expires_at,
        decided_at=row.decided_at,
        result=row.result,
        error=row.error,
        error_code=str(row.result["code"])
        if row.status == ProposalStatus.FAILED and row.result
        else None,
    )
