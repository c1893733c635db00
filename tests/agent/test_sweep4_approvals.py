"""Approvals around the turn cap: one whose turn stops before carrying it out is said not to
have happened, `continue` proposes such a part again, and a part a stopped `continue` did not
show again cannot be approved (A8, A12, A18)."""

from __future__ import annotations

from typing import Any

import pytest

from benchgen.agent.messages import MessageIn
from benchgen.agent.turn import complete_turn
from benchgen.core.clock import ManualClock
from benchgen.core.context import Principal
from benchgen.core.errors import Conflict
from benchgen.services import deployment
from benchgen.services.benchmarks import lifecycle
from benchgen.services.chat import conversations, proposals
from tests.agent.scripted import Script, begin_turn, new_conversation, say
from tests.support import OPERATOR, World

CAP_S = 60
MANY = [{"prompt": f"{n} squared?", "answer": str(n * n)} for n in range(120)]
BIG = {"title": "Squares", "format": "qa", "questions": MANY}


def _late(world: World, api: Principal, conv: str, message: MessageIn, clock: ManualClock) -> Any:
    """Send `message`, then let its turn wait past its cap (for a free thread) before it acts."""
    started = begin_turn(world.rt, api, conv, message)
    clock.advance(seconds=CAP_S + 1)
    return started, complete_turn(started, Script().brain())


def _approved_late(
    world: World, api: Principal, conv: str, shown: conversations.TurnView, clock: ManualClock
) -> conversations.TurnView:
    """Approve `shown`, then let the turn wait past its cap (for a free thread) before it acts."""
    assert shown.status == "awaiting_approval", shown.reply
    message = MessageIn.model_validate({"action": shown.buttons[0]["action"]})
    started, done = _late(world, api, conv, message, clock)
    assert started.approved is not None
    return done


@pytest.fixture(autouse=True)
def short_cap(world: World) -> None:
    # Shorter than a proposal's life: the approval is still in time when the turn stops.
    assert proposals.EXPIRY.total_seconds() > CAP_S
    world.do(OPERATOR, deployment.set_setting, "agent_turn_cap_s", str(CAP_S))


def test_an_approval_its_turn_never_carried_out_is_said_not_to_have_happened(
    world: World, ana: str, api: Principal, clock: ManualClock
) -> None:
    """The turn answered only "stopped cleanly; nothing is half-done. Reply `continue` to go
    on": the user was never told that what they approved did not happen, and never would be."""
    bm = world.benchmark(ana)
    conv = new_conversation(world.rt, api)
    publish = Script([[("propose_publish", {"benchmark_id": bm})]])
    shown = say(world.rt, api, conv, publish.brain(), "publish it")
    late = _approved_late(world, api, conv, shown, clock)
    assert late.status == "stopped_at_cap"
    assert "What you approved was not carried out" in late.reply, late.reply
    assert shown.proposal is not None and shown.proposal.id in late.reply
    assert "nothing was done" in late.reply
    assert world.do(api, lifecycle.get_benchmark, bm).visibility == "private"


def test_continue_proposes_again_a_part_approved_but_never_carried_out(
    world: World, ana: str, api: Principal, clock: ManualClock
) -> None:
    """`continue` dropped the plan ("the last part was approved"): the part was neither
    carried out nor ever proposed again."""
    conv = new_conversation(world.rt, api)
    first = say(world.rt, api, conv, Script([[("propose_create_benchmark", BIG)]]).brain(), "make")
    late = _approved_late(world, api, conv, first, clock)
    assert first.proposal is not None and late.status == "stopped_at_cap"
    assert world.do(api, proposals.get_proposal, first.proposal.id).status == "approved"
    again = say(world.rt, api, conv, Script().brain(), "continue")
    assert again.proposal is not None, again.reply
    assert again.proposal.preview_hash == first.proposal.preview_hash
    for _ in range(3):
        say(world.rt, api, conv, Script().brain(), "yes")
    created: list[Any] = world.do(Principal.web(ana), lifecycle.list_benchmarks, mine_only=True)
    assert [b.question_count for b in created] == [120]


def test_a_part_carried_out_as_the_cap_passed_is_said_to_be_done(
    world: World, ana: str, api: Principal, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cap passing while an approved part was created dropped the "Created benchmark"
    reply: the turn said only that it stopped, as if nothing had happened."""
    conv = new_conversation(world.rt, api)
    first = say(world.rt, api, conv, Script([[("propose_create_benchmark", BIG)]]).brain(), "make")
    execute = proposals.execute

    def slow(*args: Any, **kwargs: Any) -> proposals.ProposalView:
        done = execute(*args, **kwargs)
        clock.advance(seconds=CAP_S + 1)
        return done

    monkeypatch.setattr(proposals, "execute", slow)
    done = say(world.rt, api, conv, Script().brain(), action=first.buttons[0]["action"])
    monkeypatch.undo()
    assert done.status == "stopped_at_cap"
    assert "Created benchmark" in done.reply and "Reply `continue`" in done.reply, done.reply
    assert done.proposal is not None and done.proposal.status == "executed"
    part2 = say(world.rt, api, conv, Script().brain(), "continue")
    assert part2.proposal is not None and part2.proposal.kind == "edit_benchmark", part2.reply


def _created(world: World, ana: str) -> list[int]:
    mine = world.do(Principal.web(ana), lifecycle.list_benchmarks, mine_only=True)
    return [b.question_count for b in mine]


@pytest.mark.parametrize("words", ["ok", "yes"])
def test_assent_after_a_continue_that_showed_nothing_approves_nothing(
    world: World, ana: str, api: Principal, clock: ManualClock, words: str
) -> None:
    """A `continue` stopped by the cap before it showed the waiting part again left that part
    pending: "ok" to "I reached this turn's time limit" created the benchmark unseen."""
    conv = new_conversation(world.rt, api)
    first = say(world.rt, api, conv, Script([[("propose_create_benchmark", BIG)]]).brain(), "make")
    _, capped = _late(world, api, conv, MessageIn(text="continue"), clock)
    assert capped.status == "stopped_at_cap" and capped.proposal is None
    answered = say(world.rt, api, conv, Script(["Noted."]).brain(), words)
    assert answered.reply == "Noted." and _created(world, ana) == []
    assert first.proposal is not None
    assert world.do(api, proposals.get_proposal, first.proposal.id).status == "declined"


def test_the_approve_control_waits_for_the_part_to_be_shown_again(
    world: World, ana: str, api: Principal, clock: ManualClock
) -> None:
    conv = new_conversation(world.rt, api)
    first = say(world.rt, api, conv, Script([[("propose_create_benchmark", BIG)]]).brain(), "make")
    _late(world, api, conv, MessageIn(text="continue"), clock)
    approve = first.buttons[0]["action"]
    with pytest.raises(Conflict, match="latest reply in this conversation did not show"):
        say(world.rt, api, conv, Script().brain(), action=approve)
    assert _created(world, ana) == []
    again = say(world.rt, api, conv, Script().brain(), "continue")
    assert again.proposal is not None and first.proposal is not None
    assert again.proposal.id == first.proposal.id
    done = say(world.rt, api, conv, Script().brain(), action=approve)
    assert "Created benchmark" in done.reply and _created(world, ana) == [50]


def test_the_service_refuses_to_approve_what_the_latest_reply_did_not_show(
    world: World, ana: str, api: Principal, clock: ManualClock
) -> None:
    """The rule lived in the chat turn's code: `proposals.decide`, which any door may call,
    approved a pending proposal that the latest reply had not shown."""
    conv = new_conversation(world.rt, api)
    first = say(world.rt, api, conv, Script([[("propose_create_benchmark", BIG)]]).brain(), "make")
    _late(world, api, conv, MessageIn(text="continue"), clock)
    assert first.proposal is not None
    shown = first.proposal
    assert world.do(api, proposals.shown_last, conv) is None
    with pytest.raises(Conflict, match="latest reply in this conversation did not show"):
        world.do(api, proposals.decide, conv, shown.id, shown.preview_hash, True)
    assert world.do(api, proposals.pending_for, conv).id == shown.id  # nothing was decided
