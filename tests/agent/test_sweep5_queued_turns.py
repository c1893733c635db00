"""A turn that waits for a free agent thread gets its whole cap once a thread takes it up."""

from __future__ import annotations

import threading

from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo

from benchgen.agent import replies
from benchgen.agent.messages import MessageIn
from benchgen.agent.runner import TurnRunner
from benchgen.agent.turn import claim_turn, run_turn
from benchgen.core.clock import ManualClock
from benchgen.core.context import Principal
from benchgen.services.accounts import tokens
from benchgen.services.chat import conversations
from benchgen.services.chat.conversations import TurnView
from benchgen.services.runtime import transaction
from tests.agent.scripted import new_conversation, think_with
from tests.support import World


def _asked(messages: list[ModelMessage]) -> str:
    first = messages[-1]
    assert isinstance(first, ModelRequest)
    return str(first.parts[-1].content)


def _queued_behind_a_busy_thread(
    world: World, api: Principal, clock: ManualClock
) -> tuple[TurnView, TurnView]:
    """A turn sent while the one thread is busy, and the same turn once it ran, after a wait
    longer than the cap and the credential's hard expiry."""
    release = threading.Event()

    def brain(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if _asked(messages) == "slow":
            assert release.wait(30)
        return ModelResponse(parts=[TextPart("done")])

    runner = TurnRunner(world.rt, think_with(brain), threads=1)
    try:
        busy = runner.send(api, new_conversation(world.rt, api), MessageIn(text="slow"), 0.1)
        assert busy.status == "running"
        conv = new_conversation(world.rt, api)
        queued = runner.send(api, conv, MessageIn(text="hello"), 0.1)
        assert queued.status == "running"
        clock.advance(seconds=world.rt.settings.agent_turn_cap_s + 120)
        release.set()
    finally:
        runner.close()
    with transaction(world.rt, api, write=False) as ctx:
        return queued, conversations.get_turn(ctx, conv, queued.id)


def test_a_queued_turn_is_not_capped_by_its_wait(
    world: World, api: Principal, clock: ManualClock
) -> None:
    """The cap and the credential started when the message came in: a turn that waited longer
    than the cap for the one busy thread stopped at once, "at its 15-minute limit", having done
    nothing."""
    _, done = _queued_behind_a_busy_thread(world, api, clock)
    assert (done.status, done.reply) == ("completed", "done")


def test_a_queued_turn_says_it_waits(world: World, api: Principal, clock: ManualClock) -> None:
    """A turn waiting for a thread read as a bare `running`, as if the agent were working."""
    queued, _ = _queued_behind_a_busy_thread(world, api, clock)
    cap_s = world.rt.settings.agent_turn_cap_s
    assert queued.reply == replies.waiting_for_thread(cap_s)


def test_a_turn_a_free_thread_takes_says_nothing_of_waiting(world: World, api: Principal) -> None:
    """The waiting note is for a turn that really waits: one taken up at once shows none."""
    started = threading.Event()
    release = threading.Event()

    def brain(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        started.set()
        assert release.wait(30)
        return ModelResponse(parts=[TextPart("done")])

    runner = TurnRunner(world.rt, think_with(brain), threads=2)
    try:
        conv = new_conversation(world.rt, api)
        running = runner.send(api, conv, MessageIn(text="hello"), 0)
        assert started.wait(30)
        assert running.reply == ""
        release.set()
    finally:
        runner.close()


def test_a_turn_whose_access_ended_while_it_waited_fails_and_frees_its_conversation(
    world: World, api: Principal
) -> None:
    """Minted only when a thread takes the turn up, the credential cannot be minted for a user
    whose token was revoked meanwhile: the turn must say so and leave the conversation free,
    not hold it until its lease lapses."""
    conv = new_conversation(world.rt, api)
    claimed = claim_turn(world.rt, api, conv, MessageIn(text="hello"))
    assert api.token_id is not None and api.user_id is not None
    world.do(Principal.web(api.user_id), tokens.revoke_token, api.token_id)
    ended = run_turn(claimed, think_with(lambda messages, info: ModelResponse(parts=[])))
    assert (ended.status, ended.reply) == ("failed", replies.LOST_ACCESS)
    web = Principal.web(api.user_id)
    assert not world.do(web, conversations.get_conversation, conv)[0].busy
