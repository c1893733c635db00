"""The phase a run or a submission goes to when it names none: the one open now, by one rule
for every door; with none open, a refusal that says so and names `phase`."""

from __future__ import annotations

import copy

import pytest

from benchgen.core.clock import ManualClock
from benchgen.core.context import Principal
from benchgen.core.errors import Conflict
from benchgen.core.permissions import PrincipalKind
from benchgen.services.benchmarks import bundles, phases
from benchgen.services.chat import proposals
from benchgen.services.runs import launch, submissions
from tests.bundle_factory import ANSWERS, bundle, competition, require_sandbox, results
from tests.support import World

ECHO = "mdl_builtin_echo"
DOORS = (PrincipalKind.WEB, PrincipalKind.API, PrincipalKind.AGENT, PrincipalKind.CLI)


@pytest.fixture(autouse=True)
def _sandbox() -> None:
    require_sandbox()


def two_phases(final_end: str | None = None) -> dict:
    """Development until 10 January 2026; Final from 12 January (until `final_end`)."""
    comp = competition()
    comp["phases"][0]["end"] = "2026-01-10T00:00:00Z"
    final = {**copy.deepcopy(comp["phases"][0]), "index": 1, "name": "Final"}
    final.update(start="2026-01-12T00:00:00Z", end=final_end)
    comp["phases"].append({k: v for k, v in final.items() if v is not None})
    return comp


def upload(world: World, owner: str, comp: dict) -> str:
    made = world.do(Principal.web(owner), bundles.upload_bundle, bundle(comp), "two.zip")
    return made.benchmark.id


def phase_name(world: World, owner: str, benchmark: str, phase_id: str) -> str:
    found = world.do(Principal.web(owner), phases.list_phases, benchmark)
    return next(p.name for p in found if p.id == phase_id)


@pytest.mark.parametrize("kind", DOORS)
def test_a_run_without_a_phase_goes_to_the_phase_open_now_not_the_first(
    world: World, clock: ManualClock, kind: PrincipalKind
) -> None:
    """Once Development had ended, a run naming no phase went to it and was refused."""
    ana = world.user("ana@example.com", credits_=1000)
    benchmark = upload(world, ana, two_phases())
    clock.advance(days=12)  # 13 January: Development ended, Final open
    who = world.principal(kind, ana)
    run = world.do(who, launch.start_run, benchmark, ECHO)
    assert phase_name(world, ana, benchmark, run.phase_id) == "Final"
    estimate = world.do(who, launch.preview_run, benchmark, ECHO)
    assert estimate.benchmark_id == benchmark
    sent = world.do(who, submissions.submit, benchmark, results(ANSWERS), "a.zip")
    assert sent.phase_id == run.phase_id
    assert world.do(who, submissions.current_phase, benchmark) == 1


def test_with_no_phase_open_every_way_in_says_so_naming_phase(
    world: World, clock: ManualClock
) -> None:
    ana = world.user("ana@example.com", credits_=1000)
    benchmark = upload(world, ana, two_phases(final_end="2026-01-20T00:00:00Z"))
    web = Principal.web(ana)
    clock.advance(days=10, hours=12)  # between the phases
    calls = {
        "run": lambda: world.do(web, launch.start_run, benchmark, ECHO),
        "estimate": lambda: world.do(web, launch.preview_run, benchmark, ECHO),
        "submission": lambda: world.do(
            web, submissions.submit, benchmark, results(ANSWERS), "a.zip"
        ),
    }
    for name, call in calls.items():
        with pytest.raises(Conflict) as refused:
            call()
        assert "the phases of this benchmark are not open now" in refused.value.message, name
        assert "`phase`" in refused.value.message, name
        assert "'Final' opens at 2026-01-12 00:00 UTC" in refused.value.message, name
        assert refused.value.details["field"] == "phase", name
    assert world.do(web, submissions.current_phase, benchmark) is None
    clock.advance(days=30)  # every phase over
    with pytest.raises(Conflict, match="every phase has closed"):
        world.do(web, launch.start_run, benchmark, ECHO)
    assert world.do(web, launch.list_runs, benchmark) == []


def test_a_named_closed_phase_is_still_refused_by_its_name(
    world: World, clock: ManualClock
) -> None:
    ana = world.user("ana@example.com", credits_=1000)
    benchmark = upload(world, ana, two_phases())
    web = Principal.web(ana)
    clock.advance(days=12)
    development = world.do(web, phases.list_phases, benchmark)[0]
    with pytest.raises(Conflict, match="'Development' is not open now"):
        world.do(web, launch.start_run, benchmark, ECHO, development.id)


def test_the_agent_proposes_no_run_while_no_phase_is_open(world: World, clock: ManualClock) -> None:
    """The proposal was stored and shown, to fail only once the user approved it."""
    ana = world.user("ana@example.com", credits_=1000)
    benchmark = upload(world, ana, two_phases())
    clock.advance(days=10, hours=12)
    turn = world.principal(PrincipalKind.AGENT, ana)
    arguments = {"benchmark_id": benchmark, "model_id": ECHO}
    with pytest.raises(Conflict, match="the phases of this benchmark are not open now"):
        world.do(turn, proposals.propose, "conv_default_phase", "start_run", arguments)
    clock.advance(days=2)
    turn = world.principal(PrincipalKind.AGENT, ana)
    shown = world.do(turn, proposals.propose, "conv_default_phase", "start_run", arguments)
    assert shown.preview["estimated_credits"] >= 0
