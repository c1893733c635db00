"""Rescoring never calls a model; leaderboards rank correctly and are managed by people only."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select

import benchgen.evals.adapters as adapters
from benchgen.core.context import Context, Principal
from benchgen.core.errors import Conflict, InvalidInput, NotFound, PermissionDenied
from benchgen.core.permissions import PrincipalKind
from benchgen.db.tables import AuditEvent, Run
from benchgen.evals.adapters import builtin
from benchgen.jobs.worker import Worker
from benchgen.services import audit, models
from benchgen.services.benchmarks import lifecycle, members
from benchgen.services.runs import launch, leaderboards, rescoring, standings
from benchgen.services.runs.leaderboards import Column
from benchgen.services.runtime import Runtime
from tests.evals.stub_openai import Fault, StubOpenAI
from tests.support import OPERATOR, QA, World

pytestmark = pytest.mark.both_backends  # ranking and ordering in SQL

ECHO, FIRST, RANDOM = "mdl_builtin_echo", "mdl_builtin_first", "mdl_builtin_random"
SPELLING = {
    "title": "Capitals",
    "format": "qa",
    "questions": [
        {"prompt": "What is the capital of Italy?", "answer": "Rome"},
        {"prompt": "What is the capital of France?", "answer": "Paris"},
        {"prompt": "What is the capital of Spain?", "answer": "Madrid"},
    ],
}
# Wordy but right for Italy and France, wrong for Spain: exact match says 0/3, token F1 2/3.
REPLIES = {
    "Italy": "ANSWER: Rome, Italy",
    "France": "ANSWER: Paris, France",
    "Spain": "ANSWER: Lisbon",
}


def _wordy(_: int, prompt: str) -> Fault:
    text = next(reply for country, reply in REPLIES.items() if country in prompt)
    body = {
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 9, "completion_tokens": 4, "total_tokens": 13},
    }
    return Fault(200, body=json.dumps(body), headers=(("Content-Type", "application/json"),))


@pytest.fixture
def wordy_model(world: World, runtime: Runtime) -> Iterator[str]:
    """A platform model behind a stub endpoint that answers with the REPLIES above."""
    runtime.settings = runtime.settings.model_copy(update={"model_host_allowlist": "127.0.0.1"})
    with StubOpenAI(fail=_wordy) as stub:
        spec = {
            "name": "Wordy",
            "kind": "openai_compat",
            "endpoint_model": "stub",
            "base_url": stub.base_url,
        }
        yield world.do(OPERATOR, models.create_platform_model, spec).id


def finished_run(world: World, runtime: Runtime, user: str, bm: str, model: str) -> str:
    run_id = world.do(Principal.web(user), launch.start_run, bm, model).id
    while Worker(runtime).run_once():
        pass
    return run_id


def test_rescore_dry_run_then_apply_without_calling_a_model(
    world: World, runtime: Runtime, monkeypatch: pytest.MonkeyPatch, wordy_model: str
) -> None:
    ana = world.user("ana@example.com")
    bm = world.benchmark(ana, SPELLING)
    run_id = finished_run(world, runtime, ana, bm, wordy_model)
    web = Principal.web(ana)
    before = world.do(web, launch.get_run, run_id).summary["accuracy"]
    assert before == 0.0
    forbidden_adapter(monkeypatch)
    dry = world.do(web, rescoring.rescore_run, run_id, {"method": "f1"})
    assert not dry.applied and dry.changed_count == len(dry.changes) == 2
    assert dry.after["accuracy"] == pytest.approx(2 / 3)
    assert [(c["position"], c["after"]["outcome"]) for c in dry.changes] == [
        (0, "correct"),
        (1, "correct"),
    ]
    assert world.do(web, launch.get_run, run_id).summary["accuracy"] == before, "dry run wrote"
    applied = world.do(web, rescoring.rescore_run, run_id, {"method": "f1"}, True)
    assert applied.applied and applied.after == dry.after
    now = world.do(web, launch.get_run, run_id)
    assert now.summary["accuracy"] == dry.after["accuracy"] and now.scoring["method"] == "f1"
    again = world.do(web, rescoring.rescore_run, run_id)
    assert again.changed_count == 0, "applying stored exactly the new verdicts"
    actions = world.ctx_call(
        OPERATOR,
        lambda ctx: list(
            ctx.session.scalars(select(AuditEvent.action).where(AuditEvent.object_id == run_id))
        ),
    )
    assert "run.rescore" in actions


def forbidden_adapter(monkeypatch: pytest.MonkeyPatch) -> None:
    def forbidden(*_: object, **__: object) -> None:
        raise AssertionError("rescoring called a model adapter")

    monkeypatch.setattr(adapters, "build_adapter", forbidden)
    monkeypatch.setattr(builtin.BuiltinAdapter, "complete", forbidden)


def test_the_forbidden_adapter_really_trips(
    world: World, runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Control: the same guard makes a real run fail, so the rescore test above means something."""
    ana = world.user("ana@example.com")
    bm = world.benchmark(ana, SPELLING)
    forbidden_adapter(monkeypatch)
    import benchgen.jobs.handlers as handlers

    monkeypatch.setattr(handlers, "build_adapter", adapters.build_adapter)
    run_id = world.do(Principal.web(ana), launch.start_run, bm, ECHO).id
    assert Worker(runtime).run_once()
    assert "rescoring called a model adapter" in world.ctx_call(
        OPERATOR, lambda ctx: _job_error(ctx, run_id)
    )


def _job_error(ctx, run_id: str) -> str:
    from benchgen.db.tables import Job, Run

    run = ctx.session.get(Run, run_id)
    return ctx.session.get(Job, run.job_id).error


def test_rescore_rules(world: World, runtime: Runtime) -> None:
    ana, pia = world.user("ana@example.com"), world.user("pia@example.com")
    bm = world.benchmark(ana, SPELLING)
    world.do(Principal.web(ana), lifecycle.publish_benchmark, bm)
    world.do(Principal.web(pia), members.join_benchmark, bm, True)
    theirs = finished_run(world, runtime, pia, bm, ECHO)
    own = world.do(Principal.web(pia), rescoring.rescore_run, theirs)
    assert own.changes == [] and "accuracy" in own.after  # aggregates only, no per-question diff
    with pytest.raises(PermissionDenied):
        world.do(Principal.web(pia), rescoring.rescore_run, theirs, {"method": "f1"})
    with pytest.raises(InvalidInput):
        world.do(Principal.web(ana), rescoring.rescore_run, theirs, {"method": "choice"})
    with pytest.raises(Conflict, match="would call a model"):
        world.do(Principal.web(ana), rescoring.rescore_run, theirs, {"method": "judge"})
    queued = world.do(Principal.web(ana), launch.start_run, bm, ECHO).id
    with pytest.raises(Conflict, match="finished"):
        world.do(Principal.web(ana), rescoring.rescore_run, queued)


def test_leaderboard_ranking_and_management(world: World, runtime: Runtime, clock) -> None:
    ana, bob = world.user("ana@example.com"), world.user("bob@example.com")
    bm = world.benchmark(ana, QA)
    web = Principal.web(ana)
    echo = finished_run(world, runtime, ana, bm, ECHO)
    clock.advance(seconds=5)
    first = finished_run(world, runtime, ana, bm, RANDOM)  # first-choice cannot answer qa
    token = world.principal(PrincipalKind.API, ana)
    with pytest.raises(PermissionDenied):
        world.do(token, leaderboards.add_to_leaderboard, echo)
    agent = world.principal(PrincipalKind.AGENT, ana)
    with pytest.raises(PermissionDenied):
        world.do(agent, leaderboards.add_to_leaderboard, echo)
    with pytest.raises(NotFound):
        world.do(Principal.web(bob), leaderboards.add_to_leaderboard, echo)
    world.do(web, leaderboards.add_to_leaderboard, first)
    world.do(web, leaderboards.add_to_leaderboard, echo)
    with pytest.raises(Conflict):
        world.do(web, leaderboards.add_to_leaderboard, echo)
    board = world.do(web, leaderboards.get_leaderboard, bm)
    assert board.columns == ["accuracy"]
    # Both score 0 on these qa questions: the earlier run ranks first.
    assert [row.run_id for row in board.rows] == [echo, first]
    world.do(web, leaderboards.edit_run_score, first, {"accuracy": 0.9}, "regrade")
    board = world.do(web, leaderboards.get_leaderboard, bm)
    assert [row.run_id for row in board.rows] == [first, echo] and board.rows[0].score_edited
    world.do(web, leaderboards.remove_from_leaderboard, echo)
    assert [row.run_id for row in world.do(web, leaderboards.get_leaderboard, bm).rows] == [first]
    with pytest.raises(InvalidInput):
        world.do(web, leaderboards.edit_run_score, first, {"accuracy": 2}, "oops")
    assert any(
        event.action == "run.edit_score" for event in world.do(OPERATOR, audit.list_events, first)
    )


def test_a_hand_correction_outlasts_rescoring_and_every_edit_is_audited_with_its_before(
    world: World, runtime: Runtime
) -> None:
    """Applying a rescore (the launcher may, on a published benchmark: a stranger) wrote the
    computed score over the owner's correction, while the run stayed marked corrected."""
    ana, eve = world.user("ana@example.com"), world.user("eve@example.com", credits_=100)
    bm = world.benchmark(ana, QA)
    world.do(Principal.web(ana), lifecycle.publish_benchmark, bm)
    strangers = finished_run(world, runtime, eve, bm, ECHO)
    computed = world.do(Principal.web(eve), launch.get_run, strangers).scores
    owner = Principal.web(ana)
    world.do(owner, leaderboards.edit_run_score, strangers, {"accuracy": 0.1}, "copied the key")
    world.do(owner, leaderboards.edit_run_score, strangers, {"accuracy": 0.2}, "less harsh")
    world.do(world.principal(PrincipalKind.API, eve), rescoring.rescore_run, strangers, None, True)
    shown = world.do(owner, launch.get_run, strangers)
    assert shown.scores == {"accuracy": 0.2} and shown.score_edited
    events = world.do(OPERATOR, audit.list_events, strangers, action="run.edit_score")
    befores = {event.details["scores"]["accuracy"]: event.details["before"] for event in events}
    assert befores == {0.1: computed, 0.2: {"accuracy": 0.1}}
    # Rescoring with other settings moves the computed figures, never the correction.
    world.do(owner, rescoring.rescore_run, strangers, {"method": "includes"}, True)
    assert world.do(owner, launch.get_run, strangers).scores == {"accuracy": 0.2}


def test_a_score_is_corrected_only_once_its_run_completed(world: World, runtime: Runtime) -> None:
    ana = world.user("ana@example.com")
    bm = world.benchmark(ana, QA)
    queued = world.do(Principal.web(ana), launch.start_run, bm, ECHO).id
    with pytest.raises(Conflict, match="Only a completed run's score"):
        world.do(Principal.web(ana), leaderboards.edit_run_score, queued, {"accuracy": 1}, "x")
    while Worker(runtime).run_once():
        pass
    shown = world.do(Principal.web(ana), launch.get_run, queued)
    assert not shown.score_edited and shown.scores == {"accuracy": 0.0}


def test_unfinished_runs_stay_off(world: World, runtime: Runtime) -> None:
    ana = world.user("ana@example.com")
    bm = world.benchmark(ana, QA)
    queued = world.do(Principal.web(ana), launch.start_run, bm, ECHO).id
    with pytest.raises(Conflict, match="completed"):
        world.do(Principal.web(ana), leaderboards.add_to_leaderboard, queued)


Scores = dict[str, float | None]


def ranked_by(
    world: World, runtime: Runtime, columns: list[Column], entries: list[tuple[Scores, int]]
) -> list[Scores]:
    """The scores of runs on one leaderboard (each finished `minutes` after a start, and
    pinned to them), in the order the database ranks them by `columns`."""
    ana = world.user(f"ranker{len(entries)}{len(columns)}@example.com")
    bm = world.benchmark(ana, QA)
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    pinned: dict[str, tuple[Scores, int]] = {}
    for scores, minutes in entries:
        run_id = finished_run(world, runtime, ana, bm, ECHO)
        world.do(Principal.web(ana), leaderboards.add_to_leaderboard, run_id)
        pinned[run_id] = (scores, minutes)

    def pin(ctx: Context) -> None:
        for run_id, (scores, minutes) in pinned.items():
            run = ctx.session.get(Run, run_id)
            assert run is not None
            run.scores, run.finished_at = scores, t0 + timedelta(minutes=minutes)

    phase = world.do(Principal.web(ana), leaderboards.get_leaderboard, bm).phase_id
    world.ctx_call(OPERATOR, pin)
    found = world.ctx_call(
        OPERATOR, lambda ctx: standings.ranked_entries(ctx.session, phase, columns, None, None)
    )
    return [entry.run.scores for entry in found]


def test_missing_scores_rank_last_and_ties_go_to_the_earlier_run(
    world: World, runtime: Runtime
) -> None:
    accuracy = [Column("accuracy", "Accuracy")]
    order = ranked_by(
        world,
        runtime,
        accuracy,
        [
            ({"accuracy": None}, 0),
            ({}, 0),
            ({"accuracy": 0.2}, 0),
            ({"accuracy": 0.8}, 60),
            ({"accuracy": 0.8, "tag": 1}, 0),
        ],
    )
    assert order[:3] == [{"accuracy": 0.8, "tag": 1}, {"accuracy": 0.8}, {"accuracy": 0.2}]
    assert sorted(map(str, order[3:])) == ["{'accuracy': None}", "{}"]
    two = ranked_by(
        world,
        runtime,
        [Column("a", "A"), Column("b", "B")],
        [({"a": 0.5, "b": 0.1}, 0), ({"a": 0.5, "b": None}, 0), ({"a": 0.5, "b": 0.9}, 0)],
    )
    assert [e["b"] for e in two] == [0.9, 0.1, None]
    # A column where lower is better (errors, time) ranks its smallest value first.
    ascending = ranked_by(
        world,
        runtime,
        [Column("t", "Time", sorting="asc")],
        [({"t": 3.0}, 0), ({"t": None}, 0), ({"t": 1.0}, 0)],
    )
    assert [e["t"] for e in ascending] == [1.0, 3.0, None]


def test_a_score_that_is_no_number_ranks_as_missing(world: World, runtime: Runtime) -> None:
    """Only SQLite stores a NaN (PostgreSQL refuses it as JSON); ranked in SQL, it must not
    fail the board."""
    if runtime.database.engine.dialect.name != "sqlite":
        pytest.skip("PostgreSQL cannot store a NaN in JSON")
    order = ranked_by(
        world,
        runtime,
        [Column("accuracy", "Accuracy")],
        [({"accuracy": float("nan")}, 0), ({"accuracy": 0.2}, 1)],
    )
    assert order[0] == {"accuracy": 0.2}
