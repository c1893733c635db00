"""One long result can still be explained: its long texts are cut, not the whole answer refused."""

from __future__ import annotations

from typing import Any

from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo

from benchgen.agent import insight_tools
from benchgen.core.context import Principal
from benchgen.services.runs import launch
from tests.agent.scripted import last_returns, new_conversation, say, think_with
from tests.services.test_runs import work_all
from tests.support import World

LONG = 15_000


def test_a_few_shot_result_of_long_questions_is_explained_cut_not_refused(
    world: World, ana: str, api: Principal
) -> None:
    """Three worked examples (questions 1 to 3) of long questions, sent and echoed back, were
    past what a tool result may hold: the brain was told to ask for a smaller page, which this
    tool has not."""
    items = [
        {"prompt": f"Passage {n}: " + "word " * (LONG // 5), "answer": str(n)} for n in range(4)
    ]
    bm = world.benchmark(ana, {"title": "Long reads", "format": "qa", "questions": items})
    options = {"settings": {"few_shot": 3}}
    run = world.do(Principal.web(ana), launch.start_run, bm, "mdl_builtin_echo", None, options)
    work_all(world.rt)
    shown: list[Any] = []

    def explain(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            call = ToolCallPart("explain_result", {"run_id": run.id, "position": 3})
            return ModelResponse(parts=[call])
        shown.extend(part.content for part in last_returns(messages))
        return ModelResponse(parts=[TextPart("explained")])

    conv = new_conversation(world.rt, api)
    say(world.rt, api, conv, think_with(explain), "why was question 4 wrong?")
    (result,) = shown
    assert "error" not in result, result
    explained = result["result"]
    assert explained["prompt"].startswith("Passage 3: word word")
    assert explained["reply"].endswith(explained["prompt_sent"][-1000:])
    assert "characters cut" in explained["prompt_sent"]


def test_a_secret_across_a_cut_is_kept_whole_for_the_screening_to_find() -> None:
    key = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0" * 3
    half = insight_tools.MAX_TEXT_CHARS // 2
    text = "x " * (half // 2 - 5) + key + " y" * (3 * half) + " " + key + " z" * (half // 2 - 5)
    cut = insight_tools._cut(text)
    assert "characters cut" in cut and cut.count(key) == 2
