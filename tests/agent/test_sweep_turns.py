"""A turn's credential and record when its lease lapses or its revoke fails (A2, A8), and a
message that holds the very token it was sent with (A15)."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from benchgen.agent.credential import TurnCredential
from benchgen.agent.messages import MessageIn
from benchgen.agent.turn import complete_turn
from benchgen.app import create_app
from benchgen.core.clock import ManualClock
from benchgen.core.context import Principal
from benchgen.core.errors import Unauthenticated
from benchgen.services.accounts import tokens
from benchgen.services.chat import conversations, proposals
from tests.agent.scripted import Script, begin_turn, new_conversation
from tests.support import OPERATOR, World


def _dead(world: World, secret: str) -> bool:
    try:
        world.do(OPERATOR, tokens.authenticate_turn_credential, secret)
    except Unauthenticated:
        return True
    return False


@pytest.mark.both_backends
def test_a_turn_cut_off_by_its_lease_acts_no_more_beside_the_next(
    world: World, ana: str, api: Principal, clock: ManualClock
) -> None:
    """A stalled process's turn is released when its lease lapses; it must not go on acting
    beside the next turn, nor, when it wakes, turn its late proposal into one "yes" approves."""
    bm = world.benchmark(ana)
    conv = new_conversation(world.rt, api)
    stalled = begin_turn(world.rt, api, conv, MessageIn(text="publish it"))
    clock.advance(seconds=world.rt.settings.agent_turn_lease_s + 1)
    later = begin_turn(world.rt, api, conv, MessageIn(text="hello"))
    assert _dead(world, stalled.credential.secret)
    woke = Script([[("propose_publish", {"benchmark_id": bm})], "proposed"])
    cut = complete_turn(stalled, woke.brain())
    assert cut.status == "failed" and "cut off" in cut.reply and cut.proposal is None
    assert complete_turn(later, Script(["hi"]).brain()).status == "completed"
    assert world.do(api, proposals.pending_for, conv) is None
    _, turns = world.do(api, conversations.get_conversation, conv)
    assert [turn.status for turn in turns] == ["failed", "completed"]


def test_a_failed_revoke_still_records_the_turn_and_ends_its_credential(
    world: World, api: Principal, monkeypatch: pytest.MonkeyPatch
) -> None:
    def busy(self: TurnCredential) -> None:
        raise RuntimeError("database is locked")

    monkeypatch.setattr(TurnCredential, "revoke", busy)
    conv = new_conversation(world.rt, api)
    started = begin_turn(world.rt, api, conv, MessageIn(text="hello"))
    turn = complete_turn(started, Script(["hi"]).brain())
    assert turn.status == "completed" and turn.reply == "hi"
    assert _dead(world, started.credential.secret)
    assert world.do(api, conversations.get_conversation, conv)[0].busy is False


def test_pasting_the_token_a_message_is_sent_with_says_it_was_revoked(
    world: World, ana: str
) -> None:
    """The token is revoked (A15), so the turn cannot start: the refusal says why and where to
    make a new one, not that the account is disabled."""
    secret = world.token(ana, ["read", "create"])
    api = world.api(secret)
    conv = new_conversation(world.rt, api)
    auth = {"Authorization": f"Bearer {secret}"}
    with TestClient(create_app(world.rt.settings, world.rt, brain=Script(["hi"]).brain())) as app:
        sent = app.post(
            f"/api/v1/chat/conversations/{conv}/messages",
            json={"text": f"it is {secret}"},
            headers=auth,
        )
        assert sent.status_code == 401, sent.text
        message = sent.json()["error"]["message"]
        assert "has been revoked" in message and "/settings/tokens" in message
        assert secret not in sent.text
        assert app.get("/api/v1/me", headers=auth).status_code == 401
