"""Large benchmarks part by part (A18): created once, then extended by each approved part."""

from __future__ import annotations

from math import ceil
from typing import Any

from benchgen.agent.state import TurnState
from benchgen.core.context import Context
from benchgen.core.statuses import ProposalStatus
from benchgen.services.chat import proposals


def first_part_lead(total: int, part_size: int) -> str:
    """What the user is told above the first part's preview."""
    count = ceil(total / part_size)
    return (
        f"This benchmark has {total} questions, so I will propose it in {count} parts of up to "
        f"{part_size}: it is created with part 1 and each later part is added once you approve "
        f"it. Part 1 of {count}: questions 1–{part_size}. Nothing has happened yet."
    )


def start_plan(state: TurnState, title: str, questions: list[dict[str, Any]]) -> None:
    """Remember the questions still to propose, tied to the first part's proposal."""
    assert state.proposal is not None
    state.plan = {
        "title": title,
        "questions": questions,
        "proposed": state.part_size,
        "benchmark_id": None,
        "proposal_id": state.proposal.id,
    }
    state.plan_changed = True
    state.lead = first_part_lead(len(questions), state.part_size)


def propose_next(state: TurnState, executed: proposals.ProposalView) -> str | None:
    """After a part was carried out, propose the next one as an edit adding its questions.

    Returns the text to show above the new preview, or None when nothing follows (the plan is
    finished, or it no longer matches what was approved — then it is dropped).
    """
    plan = state.plan
    result = executed.result or {}
    if plan is None or plan.get("proposal_id") != executed.id or executed.status != "executed":
        state.plan, state.plan_changed = None, True
        return None
    total, done = len(plan["questions"]), int(plan["proposed"])
    if done >= total:
        state.plan, state.plan_changed = None, True
        return None
    benchmark_id = plan["benchmark_id"] or result["benchmark_id"]
    upto = min(done + state.part_size, total)
    change = {"title": None, "description": None, "questions": plan["questions"][:upto]}
    arguments = {"benchmark_id": benchmark_id, "change": change}

    def work(c: Context) -> proposals.ProposalView:
        made = proposals.propose(c, state.conversation_id, "edit_benchmark", arguments)
        state.proposal = made
        return made

    answer = state.call("propose_next_part", {"benchmark_id": benchmark_id, "upto": upto}, work)
    if state.proposal is None:
        state.plan, state.plan_changed = None, True
        assert isinstance(answer, dict)
        return f"The next part could not be proposed: {answer['error']['message']}"
    plan.update(benchmark_id=benchmark_id, proposed=upto, proposal_id=state.proposal.id)
    state.plan_changed = True
    number, count = ceil(upto / state.part_size), ceil(total / state.part_size)
    return f"Part {number} of {count}: questions {done + 1}–{upto} of {total}, added to it."


# Parts that ended without being decided, or approved in a turn that stopped before carrying
# them out (nothing carries them out later): `continue` proposes them again, unchanged.
_PROPOSE_AGAIN = frozenset(
    {
        ProposalStatus.APPROVED,
        ProposalStatus.EXPIRED,
        ProposalStatus.CANCELLED,
        ProposalStatus.SUPERSEDED,
        ProposalStatus.DRAFT,
    }
)


def resume(state: TurnState) -> str:
    """`continue`: go on with the plan from its next unapproved part.

    The part awaiting approval is shown again as it is; one that expired or was cut off by the
    cap is proposed again with the same arguments; after a carried-out part the next is
    proposed. Returns the text to show above the preview (or alone, when nothing is left).
    """
    plan = state.plan
    assert plan is not None
    last_id = str(plan["proposal_id"])

    def read(c: Context) -> proposals.ProposalView:
        return proposals.get_proposal(c, last_id)

    last = state.call("resume_plan", {"proposal_id": last_id}, read, write=False)
    if not isinstance(last, proposals.ProposalView):
        return _dropped(state, f"the last part could not be read ({last['error']['message']})")
    if last.status == ProposalStatus.PENDING:
        state.proposal = last
        return f"Continuing: {_part_label(state, plan)} is still waiting for your approval."
    if last.status == ProposalStatus.EXECUTED:
        return propose_next(state, last) or "Every part is done: nothing is left to propose."
    if last.status not in _PROPOSE_AGAIN:
        return _dropped(state, f"the last part was {last.status}")
    return _propose_again(state, plan, last)


def _propose_again(state: TurnState, plan: dict[str, Any], last: proposals.ProposalView) -> str:
    arguments = proposals.requested(last.arguments)

    def work(c: Context) -> proposals.ProposalView:
        made = proposals.propose(c, state.conversation_id, last.kind, arguments)
        state.proposal = made
        return made

    answer = state.call("propose_part_again", {"proposal_id": last.id}, work)
    if state.proposal is None:
        assert isinstance(answer, dict)
        return _dropped(state, f"it could not be proposed again ({answer['error']['message']})")
    plan["proposal_id"] = state.proposal.id
    state.plan_changed = True
    return f"Continuing with {_part_label(state, plan)}, proposed again. Nothing has happened yet."


def _part_label(state: TurnState, plan: dict[str, Any]) -> str:
    number = ceil(int(plan["proposed"]) / state.part_size)
    return f"part {number} of {ceil(len(plan['questions']) / state.part_size)}"


def _dropped(state: TurnState, why: str) -> str:
    state.plan, state.plan_changed = None, True
    return f"I cannot continue the part-by-part plan: {why}. Nothing was changed."
