"""The offline planner offers a model only for benchmarks it can answer, and says so when none."""

from __future__ import annotations

from typing import Any

from benchgen.agent.brains import Brain
from benchgen.agent.brains.offline import render
from benchgen.agent.brains.offline.ask import Ask, Step
from benchgen.agent.brains.offline.parse import read_intent
from benchgen.agent.brains.offline.planner import offline_model
from benchgen.agent.brains.offline.run_steps import step_run
from benchgen.core.config import Settings
from benchgen.core.context import Principal
from benchgen.services.chat.conversations import TurnView
from tests.agent.scripted import new_conversation, say
from tests.support import MCQ, QA, World

FIRST = {"id": "mdl_builtin_first", "name": "Baseline: always the first choice"}
RANDOM = {"id": "mdl_builtin_random", "name": "Baseline: seeded random"}
CAPITALS = {"id": "bm_capitals", "title": "Capitals", "format": "qa"}
COLOURS = {"id": "bm_colours", "title": "Colours", "format": "mcq"}


def _step(text: str, models: list[dict[str, Any]], benchmarks: list[dict[str, Any]]) -> Step:
    results = [("list_models", {"models": models}), ("list_benchmarks", {"benchmarks": benchmarks})]
    return step_run(Ask(text, Settings(), results=results), read_intent(text))


def _options(step: Step) -> list[str]:
    assert isinstance(step, list) and step[0][0] == "ask_user", step
    options: list[str] = step[0][1]["options"]
    return options


def _catalogue() -> list[dict[str, Any]]:
    return [{**FIRST, "formats": ["mcq"]}, {**RANDOM, "formats": ["mcq", "qa"]}]


def test_models_offered_for_a_qa_benchmark_leave_out_the_choice_only_baseline() -> None:
    options = _options(_step("run Capitals", _catalogue(), [CAPITALS]))
    assert options == ["Run Baseline: seeded random (mdl_builtin_random) on Capitals (bm_capitals)"]


def test_models_offered_for_an_mcq_benchmark_include_it() -> None:
    options = _options(_step("run Colours", _catalogue(), [COLOURS]))
    assert len(options) == 2 and any(FIRST["id"] in option for option in options)


def test_benchmarks_offered_for_the_choice_only_baseline_are_mcq_only() -> None:
    options = _options(_step("run first choice", _catalogue(), [CAPITALS, COLOURS]))
    assert len(options) == 1 and "Colours" in options[0]


def test_no_benchmark_it_can_answer_is_said_plainly() -> None:
    step = _step("run first choice", _catalogue(), [CAPITALS])
    assert step == (
        "Baseline: always the first choice (mdl_builtin_first) answers only mcq benchmarks, "
        "and you can see none."
    )


def test_no_model_that_answers_is_said_plainly() -> None:
    step = _step("run Capitals", [{**FIRST, "formats": ["mcq"]}], [CAPITALS])
    assert step == "None of the models you can run answers Capitals (bm_capitals)'s questions."


def test_entries_without_formats_are_not_filtered() -> None:
    # A model the catalogue did not describe is left to the launch's own check.
    options = _options(_step("run Capitals", [FIRST, RANDOM], [CAPITALS]))
    assert len(options) == 2


def test_the_model_list_names_a_single_format() -> None:
    listed = render.models({"models": [{**m, "kind": "builtin"} for m in _catalogue()]})
    assert (
        "Baseline: always the first choice (mdl_builtin_first): builtin, free, mcq only" in listed
    )
    assert "Baseline: seeded random (mdl_builtin_random): builtin, free\n" in listed + "\n"


def test_through_the_harness_capitals_is_offered_no_choice_only_baseline(world: World) -> None:
    turn = _chat(world, "run Capitals")
    assert turn.status == "awaiting_choice" and turn.proposal is None, turn.reply
    shown = [button["label"] for button in turn.buttons]
    assert any("mdl_builtin_random" in label for label in shown)
    assert not any("mdl_builtin_first" in label for label in shown)


def test_through_the_harness_naming_both_is_refused_plainly(world: World) -> None:
    turn = _chat(world, "run first-choice on Capitals")
    assert turn.proposal is None and turn.status == "completed", turn.reply
    assert turn.reply.startswith("I could not prepare that run:")
    assert "answers only mcq benchmarks; this benchmark is qa" in turn.reply


def _chat(world: World, text: str) -> TurnView:
    ana = world.user("ana@example.com")
    world.benchmark(ana, QA)
    world.benchmark(ana, MCQ)
    web = Principal.web(ana)
    brain = Brain("offline", offline_model(world.rt.settings))
    return say(world.rt, web, new_conversation(world.rt, web), brain, text=text)
