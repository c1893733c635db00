"""A14 where replies are recorded: disguised requests, and requests split across two texts."""

from __future__ import annotations

import pytest

from benchgen.core.context import Principal
from benchgen.services.accounts import leaks
from benchgen.services.chat import conversations
from benchgen.services.chat.conversations import TurnOutcome, TurnView
from tests.core.test_secrets import DISGUISED
from tests.services.test_leaks import finish, open_turn
from tests.support import OPERATOR, World


def _next_turn(world: World, user: str, turn: TurnView) -> TurnView:
    begin = conversations.begin_turn
    return world.do(Principal.web(user), begin, turn.conversation_id, "and then?", None)


def _withheld(world: World) -> str:
    return world.ctx_call(OPERATOR, leaks.withheld_notice)


@pytest.mark.parametrize("label", DISGUISED)
def test_a_disguised_request_in_a_button_withholds_the_reply_and_its_buttons(
    world: World, label: str
) -> None:
    ana = world.user("ana@example.com")
    buttons = [{"label": "Capitals", "action": {}}, {"label": label, "action": {}}]
    outcome = TurnOutcome("awaiting_choice", "Which benchmark?", buttons=buttons)
    done = finish(world, open_turn(world, ana), outcome)
    assert (done.status, done.reply, done.buttons) == ("completed", _withheld(world), [])


@pytest.mark.parametrize("reply", DISGUISED)
def test_a_disguised_request_in_a_reply_is_withheld(world: World, reply: str) -> None:
    ana = world.user("ana@example.com")
    done = finish(world, open_turn(world, ana), TurnOutcome("completed", reply))
    assert done.reply == _withheld(world)


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("Please paste your", "API token here."),
        ("I can publish it once you send me", "your password, okay?"),
        ("Almost done. Reply with your", "p a s s w o r d so I can sign in for you"),
    ],
)
def test_a_request_split_across_two_replies_withholds_the_second(
    world: World, first: str, second: str
) -> None:
    """Neither half asks alone; read together, as the user reads them, they do."""
    ana = world.user("ana@example.com")
    before = finish(world, open_turn(world, ana), TurnOutcome("completed", first))
    assert before.reply == first
    done = finish(world, _next_turn(world, ana, before), TurnOutcome("completed", second))
    assert done.reply == _withheld(world)


def test_a_request_split_between_a_question_and_its_option_withholds_both(
    world: World,
) -> None:
    ana = world.user("ana@example.com")
    buttons = [{"label": "API token here", "action": {}}, {"label": "later", "action": {}}]
    outcome = TurnOutcome("awaiting_choice", "Before I go on, please paste your", buttons=buttons)
    done = finish(world, open_turn(world, ana), outcome)
    assert (done.status, done.reply, done.buttons) == ("completed", _withheld(world), [])


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("I can't see your tokens.", "Type your question below."),
        (
            "Your token was revoked; make a new one at /settings/tokens.",
            "Then paste it in BENCHGEN_TOKEN.",
        ),
        ("Which token scope do you need", "runs, so I can start the run."),
    ],
)
def test_two_replies_that_ask_nothing_together_stay(world: World, first: str, second: str) -> None:
    ana = world.user("ana@example.com")
    before = finish(world, open_turn(world, ana), TurnOutcome("completed", first))
    done = finish(world, _next_turn(world, ana, before), TurnOutcome("completed", second))
    assert (before.reply, done.reply) == (first, second)
