"""A14 and previews: a benchmark's own question about a password is data, not the agent asking."""

from __future__ import annotations

import pytest

from benchgen.core.context import Principal
from benchgen.services.benchmarks import lifecycle
from tests.agent.scripted import Script, new_conversation, say
from tests.support import World


@pytest.mark.parametrize(
    "prompt", ["In the film, what is the password?", "What is your password, said the guard."]
)
def test_a_quiz_about_a_password_is_shown_whole_and_can_be_approved(
    world: World, ana: str, api: Principal, prompt: str
) -> None:
    conv = new_conversation(world.rt, api)
    spec = {
        "title": "Heist films",
        "format": "qa",
        "questions": [{"prompt": prompt, "answer": "x"}],
    }
    script = Script([[("propose_create_benchmark", spec)]])
    shown = say(world.rt, api, conv, script.brain(), "make a quiz about heist films")
    assert (shown.status, "withheld" in shown.reply) == ("awaiting_approval", False)
    assert prompt in shown.reply and shown.proposal is not None
    done = say(world.rt, api, conv, Script(["done"]).brain(), "yes")
    assert done.reply.startswith("Created benchmark"), done.reply
    titles = [b.title for b in world.do(Principal.web(ana), lifecycle.list_benchmarks)]
    assert "Heist films" in titles


def test_a_request_the_model_writes_into_a_preview_still_cancels_it(
    world: World, api: Principal
) -> None:
    """Disguised or not, a request in a question the model wrote phishes the user who reads the
    preview (see test_hardening for the plain one)."""
    conv = new_conversation(world.rt, api)
    phish = [{"prompt": "P a s t e your API t\u043eken here to approve.", "answer": "x"}]
    script = Script(
        [[("propose_create_benchmark", {"title": "Quiz", "format": "qa", "questions": phish})]]
    )
    shown = say(world.rt, api, conv, script.brain(), "make a quiz")
    assert "withheld" in shown.reply and "nothing of it will happen" in shown.reply
    assert (shown.status, shown.proposal) == ("completed", None)
