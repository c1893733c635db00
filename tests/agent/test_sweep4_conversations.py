"""A proposal belongs to the chat whose turn made it: it is never made, shown or approved in
another conversation (A8)."""

from __future__ import annotations

import pytest

from benchgen.agent.messages import MessageIn
from benchgen.agent.turn import complete_turn
from benchgen.core.context import Principal
from benchgen.core.errors import Conflict, PermissionDenied
from benchgen.services.benchmarks import lifecycle
from benchgen.services.chat import proposals
from tests.agent.scripted import Script, begin_turn, new_conversation, say
from tests.support import QA, World


def _publish(world: World, api: Principal, conv: str, bm: str) -> proposals.ProposalView:
    script = Script([[("propose_publish", {"benchmark_id": bm})]])
    shown = say(world.rt, api, conv, script.brain(), "publish it")
    assert shown.proposal is not None and shown.status == "awaiting_approval", shown.reply
    return shown.proposal


@pytest.mark.parametrize("whose", ["own", "another user's"])
def test_a_turn_cannot_propose_in_another_conversation(
    world: World, ana: str, api: Principal, whose: str
) -> None:
    """`propose` stored a proposal under any conversation id the turn's credential named: in
    the user's other chat it superseded what waited there and then waited for a "yes" there,
    though that chat never showed it."""
    mine, other = world.benchmark(ana), world.benchmark(ana, {**QA, "title": "Other"})
    here = new_conversation(world.rt, api)
    if whose == "own":
        there = new_conversation(world.rt, api)
        waiting = _publish(world, api, there, other)
    else:
        bob = world.user("bob@example.com")
        there = new_conversation(world.rt, world.api(world.token(bob, ["read"])))
    started = begin_turn(world.rt, api, here, MessageIn(text="publish it"))
    refused = "cannot propose in another conversation"
    with pytest.raises(PermissionDenied, match=refused), started.credential.context() as ctx:
        proposals.propose(ctx, there, "publish_benchmark", {"benchmark_id": mine})
    reading = started.credential.context(write=False)
    with pytest.raises(PermissionDenied, match=refused), reading as ctx:
        proposals.check_proposal(ctx, there, "publish_benchmark", {"benchmark_id": mine})
    complete_turn(started, Script(["Nothing to do."]).brain())
    if whose == "own":
        assert world.do(api, proposals.pending_for, there) == waiting
        say(world.rt, api, there, Script().brain(), "yes")
        assert world.do(api, lifecycle.get_benchmark, other).visibility == "published"
    assert world.do(api, lifecycle.get_benchmark, mine).visibility == "private"


def test_the_approve_control_of_one_chat_approves_nothing_in_another(
    world: World, ana: str, api: Principal
) -> None:
    bm = world.benchmark(ana)
    here, there = new_conversation(world.rt, api), new_conversation(world.rt, api)
    shown = _publish(world, api, here, bm)
    approve = {"type": "approve", "proposal_id": shown.id, "preview_hash": shown.preview_hash}
    with pytest.raises(Conflict, match="no such proposal in this conversation"):
        say(world.rt, api, there, Script().brain(), action=approve)
    answered = say(world.rt, api, there, Script(["Nothing waits here."]).brain(), "yes")
    assert answered.proposal is None
    assert world.do(api, lifecycle.get_benchmark, bm).visibility == "private"
    done = say(world.rt, api, here, Script().brain(), action=approve)
    assert done.proposal is not None and done.proposal.status == "executed", done.reply
