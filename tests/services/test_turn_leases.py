"""A chat turn lives while its process stamps it: one whose process died (no stamp for a lease)
is marked failed and its conversation taken by the next message, whichever process gets it."""

from __future__ import annotations

import pytest

from benchgen.agent.turn import RECORDER
from benchgen.core.context import Principal
from benchgen.core.errors import Conflict
from benchgen.services.chat import conversations
from tests.support import World


@pytest.fixture
def conversation(world: World) -> tuple[Principal, str]:
    web = Principal.web(world.user("ana@example.com"))
    return web, world.do(web, conversations.create_conversation).id


def test_a_turn_whose_process_stopped_beating_is_released(
    world: World, conversation: tuple[Principal, str]
) -> None:
    web, conv = conversation
    first = world.do(web, conversations.begin_turn, conv, "hello", None)
    world.do(RECORDER, conversations.beat_turns, [first.id])
    world.rt.clock.advance(seconds=world.rt.settings.agent_turn_lease_s - 1)
    with pytest.raises(Conflict):  # still beating a moment ago: the turn is alive
        world.do(web, conversations.begin_turn, conv, "again", None)
    world.rt.clock.advance(seconds=2)  # past the lease without a beat: its process died
    second = world.do(web, conversations.begin_turn, conv, "again", None)
    assert second.id != first.id
    dead = world.do(web, conversations.get_turn, conv, first.id)
    assert dead.status == "failed" and "cut off" in dead.reply


def test_a_turn_whose_process_died_before_its_first_beat_is_released_after_one_lease(
    world: World, conversation: tuple[Principal, str]
) -> None:
    web, conv = conversation
    first = world.do(web, conversations.begin_turn, conv, "hello", None)
    world.rt.clock.advance(seconds=world.rt.settings.agent_turn_lease_s - 1)
    with pytest.raises(Conflict):
        world.do(web, conversations.begin_turn, conv, "again", None)
    world.rt.clock.advance(seconds=2)  # never beaten: dead after one lease, not the turn's cap
    second = world.do(web, conversations.begin_turn, conv, "again", None)
    assert world.do(web, conversations.get_turn, conv, first.id).status == "failed"
    assert second.id != first.id


def test_a_beating_turn_keeps_its_conversation_past_the_lease(
    world: World, conversation: tuple[Principal, str]
) -> None:
    web, conv = conversation
    first = world.do(web, conversations.begin_turn, conv, "hello", None)
    for _ in range(5):
        world.rt.clock.advance(seconds=world.rt.settings.agent_turn_lease_s / 2)
        world.do(RECORDER, conversations.beat_turns, [first.id])
    with pytest.raises(Conflict):
        world.do(web, conversations.begin_turn, conv, "again", None)
