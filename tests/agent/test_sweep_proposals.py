"""Proposals approved after what their preview showed changed (A8, A9), and a blank message,
which must not decline one."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from benchgen.app import create_app
from benchgen.core.context import Principal
from benchgen.services.benchmarks import lifecycle
from benchgen.services.chat import proposals
from tests.agent.scripted import Script, new_conversation, say
from tests.support import World


@pytest.mark.parametrize("field", ["title", "description"])
def test_an_edit_whose_before_changed_behind_the_preview_does_nothing(
    world: World, ana: str, api: Principal, field: str
) -> None:
    """A rename or a new description is no new version; the edit's diff showed the old value as
    "before", so approving it must not overwrite, unseen, what someone wrote since."""
    bm = world.benchmark(ana)
    conv = new_conversation(world.rt, api)
    edit = {"benchmark_id": bm, field: "Chosen by the agent"}
    turn = say(world.rt, api, conv, Script([[("propose_edit_benchmark", edit)]]).brain(), "edit")
    assert turn.proposal is not None
    web = Principal.web(ana)
    world.do(web, lifecycle.edit_benchmark, bm, {field: "Written since by a person"})
    done = say(world.rt, api, conv, Script().brain(), action=dict(turn.buttons[0]["action"]))
    assert "did not happen" in done.reply and f"{field} changed after the preview" in done.reply
    now = world.do(web, lifecycle.get_benchmark, bm)
    assert getattr(now, field) == "Written since by a person"


def test_an_edit_whose_benchmark_did_not_change_is_carried_out(
    world: World, ana: str, api: Principal
) -> None:
    bm = world.benchmark(ana)
    conv = new_conversation(world.rt, api)
    edit = {"benchmark_id": bm, "description": "New words"}
    turn = say(world.rt, api, conv, Script([[("propose_edit_benchmark", edit)]]).brain(), "edit")
    done = say(world.rt, api, conv, Script().brain(), action=dict(turn.buttons[0]["action"]))
    assert done.proposal is not None and done.proposal.status == "executed", done.reply
    assert world.do(Principal.web(ana), lifecycle.get_benchmark, bm).description == "New words"


def test_a_blank_message_is_refused_naming_the_field_and_declines_nothing(
    world: World, ana: str
) -> None:
    """The web form refuses blank words; the API must too, not decline what is pending."""
    secret = world.token(ana, ["read", "publish"])
    api = world.api(secret)
    bm = world.benchmark(ana)
    conv = new_conversation(world.rt, api)
    publish = Script([[("propose_publish", {"benchmark_id": bm})]])
    assert say(world.rt, api, conv, publish.brain(), "publish").proposal is not None
    auth = {"Authorization": f"Bearer {secret}"}
    with TestClient(create_app(world.rt.settings, world.rt, brain=Script().brain())) as app:
        path = f"/api/v1/chat/conversations/{conv}/messages"
        sent = app.post(path, json={"text": " \n\t "}, headers=auth)
    assert sent.status_code == 422, sent.text
    assert sent.json()["error"]["details"]["errors"][0]["loc"] == ["body", "text"]
    pending = world.do(api, proposals.pending_for, conv)
    assert pending is not None and pending.status == "pending"
