"""Models are offered and run only on benchmarks whose format they can answer: the choice-only
baseline never on qa, through any door."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from benchgen.core.context import Principal
from benchgen.core.errors import InvalidInput, NotFound
from benchgen.core.permissions import PrincipalKind
from benchgen.db.tables import Run
from benchgen.evals.adapters import builtin
from benchgen.services import models
from benchgen.services.runs import launch
from tests.support import MCQ, OPERATOR, QA, World

FIRST, RANDOM, ECHO = "mdl_builtin_first", "mdl_builtin_random", "mdl_builtin_echo"
DOORS = [PrincipalKind.WEB, PrincipalKind.CLI, PrincipalKind.API, PrincipalKind.AGENT]


def _formats(world: World, who: Principal, benchmark_id: str | None = None) -> dict[str, list[str]]:
    listed = world.do(who, models.list_models, benchmark_id)
    return {view.id: view.formats for view in listed}


def test_every_baseline_says_what_it_answers(world: World) -> None:
    ana = Principal.web(world.user("ana@example.com"))
    mine = {
        "name": "Mine",
        "kind": "anthropic",
        "endpoint_model": "claude-test",
        "api_key": "sk-test",
    }
    own = world.do(ana, models.create_model, mine)
    formats = _formats(world, ana)
    assert formats[FIRST] == ["mcq"]
    # Custom benchmarks ask the model through their own programs: any model that answers text.
    assert formats[RANDOM] == formats[ECHO] == formats[own.id] == ["custom", "mcq", "qa"]
    assert set(builtin.FORMATS) == {"random", "first-choice", "echo"}


def test_the_list_for_a_benchmark_holds_only_models_that_answer_it(world: World) -> None:
    ana = world.user("ana@example.com")
    web = Principal.web(ana)
    capitals, colours = world.benchmark(ana, QA), world.benchmark(ana, MCQ)
    for_qa = _formats(world, web, capitals)
    assert FIRST not in for_qa and {RANDOM, ECHO} <= set(for_qa)
    assert {FIRST, RANDOM, ECHO} <= set(_formats(world, web, colours))


def test_the_list_for_a_benchmark_you_cannot_see_is_not_found(world: World) -> None:
    hidden = world.benchmark(world.user("bob@example.com"), QA)
    ana = Principal.web(world.user("ana@example.com"))
    with pytest.raises(NotFound):
        world.do(ana, models.list_models, hidden)


@pytest.mark.parametrize("door", DOORS)
def test_a_choice_only_baseline_on_qa_is_refused_at_every_door(
    world: World, door: PrincipalKind
) -> None:
    ana = world.user("ana@example.com")
    capitals = world.benchmark(ana, QA)
    who = world.principal(door, ana)
    with pytest.raises(InvalidInput) as refused:
        world.do(who, launch.start_run, capitals, FIRST)
    message = refused.value.message
    assert "always the first choice" in message and "mcq" in message and "qa" in message
    assert refused.value.details["errors"][0]["loc"] == ["model_id"]
    with pytest.raises(InvalidInput):
        world.do(who, launch.estimate_run, capitals, FIRST)  # nothing to price for a doomed run
    ran = world.ctx_call(OPERATOR, lambda ctx: ctx.session.scalar(select(func.count(Run.id))))
    assert ran == 0


def test_the_same_baseline_still_runs_on_mcq(world: World) -> None:
    ana = world.user("ana@example.com")
    colours = world.benchmark(ana, MCQ)
    assert world.do(Principal.web(ana), launch.start_run, colours, FIRST).status == "queued"
