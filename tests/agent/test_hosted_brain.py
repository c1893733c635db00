"""A hosted brain through pydantic-ai's OpenAI provider, against a local OpenAI-compatible stub."""

from __future__ import annotations

from benchgen.agent.brains import build_brain
from benchgen.core.context import Principal
from tests.agent.scripted import new_conversation, say
from tests.evals.stub_openai import Fault, StubOpenAI
from tests.support import World


def _script(n: int, prompt: str) -> Fault:
    if n == 1:
        function = {"name": "list_benchmarks", "arguments": "{}"}
        call = {"id": "call_1", "type": "function", "function": function}
        return Fault.completion({"role": "assistant", "content": None, "tool_calls": [call]})
    return Fault.completion({"role": "assistant", "content": "You have one benchmark, Capitals."})


def test_an_openai_compatible_server_drives_the_tools(world: World) -> None:
    ana = world.user("ana@example.com")
    bm = world.benchmark(ana)
    web = Principal.web(ana)
    with StubOpenAI(fail=_script) as stub:
        settings = world.rt.settings.model_copy(
            update={"agent_model": "openai:stub-model", "agent_base_url": stub.base_url}
        )
        brain = build_brain(settings)
        turn = say(world.rt, web, new_conversation(world.rt, web), brain, "what do I have?")
    assert turn.status == "completed" and turn.reply == "You have one benchmark, Capitals."
    assert turn.brain == "openai:stub-model"
    assert [call["tool"] for call in turn.tool_calls] == ["list_benchmarks"]
    # The second request carried the tool's result back to the server, and never a credential.
    sent = list(stub.received)
    assert len(sent) == 2 and bm in sent[1]
    assert not any("bga_" in prompt for prompt in sent)


def test_a_failing_hosted_brain_fails_the_turn_and_says_so(world: World) -> None:
    ana = world.user("ana@example.com")
    web = Principal.web(ana)
    refuse = Fault(401, body='{"error": {"message": "bad key"}}')
    with StubOpenAI(fail=lambda n, prompt: refuse) as stub:
        settings = world.rt.settings.model_copy(
            update={"agent_model": "openai:stub-model", "agent_base_url": stub.base_url}
        )
        turn = say(world.rt, web, new_conversation(world.rt, web), build_brain(settings), "hi")
    assert turn.status == "failed" and "openai:stub-model" in turn.reply
    assert "No other model was used" in turn.reply
