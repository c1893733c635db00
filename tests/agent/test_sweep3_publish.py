"""The preview of publishing a custom benchmark says what goes public, not "0 questions" (A7)."""

from __future__ import annotations

from benchgen.core.context import Principal
from benchgen.services.benchmarks import bundles, lifecycle
from tests.agent.scripted import Script, new_conversation, say
from tests.bundle_factory import bundle, require_sandbox
from tests.support import World


def test_publishing_a_custom_benchmark_previews_its_bundle_not_zero_questions(
    world: World, ana: str, api: Principal
) -> None:
    """Its tasks are in its bundle, so the questions counted were none: the user approved
    publishing "0 questions" whose answer key stays private, of a benchmark with a bundle."""
    require_sandbox()
    bm = world.do(Principal.web(ana), bundles.upload_bundle, bundle(), "b.zip").benchmark.id
    conv = new_conversation(world.rt, api)
    brain = Script([[("propose_publish", {"benchmark_id": bm})], "x"]).brain()
    turn = say(world.rt, api, conv, brain, text="publish it")
    assert turn.proposal is not None
    text = turn.proposal.preview["text"]
    assert "0 questions" not in text and "answer key" not in text
    assert f"({bm}, bundle version 1)" in text and "visible to everyone" in text
    done = say(world.rt, api, conv, Script().brain(), text="yes")
    assert done.reply.startswith(f"Published benchmark {bm}")
    assert world.do(api, lifecycle.get_benchmark, bm).visibility == "published"
