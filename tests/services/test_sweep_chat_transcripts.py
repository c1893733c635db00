"""A long conversation's transcript comes a page at a time, the latest turns first to come:
reading it never loads every turn at once."""

from __future__ import annotations

import pytest

from benchgen.core.context import Principal
from benchgen.core.errors import InvalidInput, NotFound
from benchgen.services.chat import conversations
from tests.agent.scripted import Script, new_conversation, say
from tests.support import World


@pytest.mark.both_backends
def test_a_transcript_pages_back_from_its_latest_turns(world: World) -> None:
    """It returned every turn of the conversation, however many, with no limit."""
    ana = Principal.web(world.user("ana@example.com"))
    conv = new_conversation(world.rt, ana)
    brain = Script(["one", "two", "three"]).brain()
    for text in ("a", "b", "c"):
        say(world.rt, ana, conv, brain, text)

    def seqs(**window: int) -> list[int]:
        view, turns = world.do(ana, conversations.get_conversation, conv, **window)
        assert view.turn_count == 3
        return [turn.seq for turn in turns]

    assert seqs(limit=2) == [2, 3]
    assert seqs(limit=2, before=2) == [1]
    assert seqs(before=1) == []
    assert seqs() == [1, 2, 3]
    for window, where in (
        ({"limit": 201}, "limit"),
        ({"limit": 0}, "limit"),
        ({"before": 0}, "before"),
        ({"before": 2**63}, "before"),
    ):
        with pytest.raises(InvalidInput) as refused:
            world.do(ana, conversations.get_conversation, conv, **window)
        assert refused.value.message.startswith(f"{where}: ")
    bob = Principal.web(world.user("bob@example.com"))
    with pytest.raises(NotFound):
        world.do(bob, conversations.get_conversation, conv, limit=1)
