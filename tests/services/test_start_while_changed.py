"""Work started on a benchmark at the moment it changes. A run or submission started as the
benchmark is deleted is stopped with the runs the delete found, never queued past it to run
anyway; one started as the questions are replaced records the version it asks; and access taken
away (unpublished, a collaborator or participant removed) goes before or after a start, never
between its checks and its writes. PostgreSQL: a row lock; SQLite: one writer at a time."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import pytest
from sqlalchemy import select, text

from benchgen.core.context import Context, Principal
from benchgen.core.errors import BenchGenError, Conflict, Frozen
from benchgen.core.statuses import RUN_ACTIVE
from benchgen.db.tables import Run
from benchgen.jobs.handlers import WORKER
from benchgen.services.benchmarks import bundles, lifecycle, members, phases
from benchgen.services.runs import bundle_execution, execution, launch, submissions
from tests.bundle_factory import bundle, competition, require_sandbox, results
from tests.support import MCQ, World

FIRST = "mdl_builtin_first"
WAITING_ON_A_LOCK = text(
    "SELECT count(*) FROM pg_stat_activity "
    "WHERE datname = current_database() AND wait_event_type = 'Lock'"
)
Call = Callable[[Context], Any]


def _until_changed_or_waiting(world: World, backend: str, changed: threading.Event) -> None:
    """Hold a start, its checks passed, until the change committed or waits for a lock.

    Without the benchmark's lock the change commits here, and the start goes on to queue a run
    after it; with it the change waits for the start. SQLite: the change cannot begin while
    this write transaction is open, so there is nothing to wait for.
    """
    if backend == "sqlite":
        return
    with world.rt.database.engine.connect() as watcher:
        deadline = time.monotonic() + 20
        while not changed.is_set() and time.monotonic() < deadline:
            if watcher.execute(WAITING_ON_A_LOCK).scalar_one():
                return
            watcher.rollback()  # pg_stat_activity is read once per transaction
            time.sleep(0.005)


def _race(
    world: World,
    backend: str,
    monkeypatch: pytest.MonkeyPatch,
    starts: list[tuple[str, Call]],
    change: tuple[str, Call],
    overtaken: list[bool] | None = None,
) -> tuple[list[Any], Any]:
    """What `starts` and `change` ((who, what) each, in a thread of its own) came back with; the
    change is sent once every start has passed its checks, and before any of them writes.
    Whether the change committed before a start went on to write is noted in `overtaken`."""
    checked, changed = threading.Semaphore(0), threading.Event()
    opened = launch.open_phase

    def paused(*args: Any) -> Any:
        phase = opened(*args)  # a start's last check before it writes anything
        checked.release()
        _until_changed_or_waiting(world, backend, changed)
        (overtaken if overtaken is not None else []).append(changed.is_set())
        return phase

    monkeypatch.setattr(launch, "open_phase", paused)
    started: list[Any] = []
    changing: list[Any] = []

    def call(who: str, fn: Call, into: list[Any]) -> None:
        try:
            into.append(world.ctx_call(Principal.web(who), fn))
        except BenchGenError as exc:
            into.append(exc)

    reached: list[bool] = []

    def changer() -> None:
        # A start that never reaches the pause would race nothing: said so below.
        reached.extend(checked.acquire(timeout=20) for _ in starts)
        call(*change, changing)
        changed.set()

    threads = [threading.Thread(target=call, args=(*start, started)) for start in starts]
    threads.append(threading.Thread(target=changer))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    monkeypatch.undo()
    assert reached == [True] * len(starts), "every start pauses at launch.open_phase"
    assert len(started) == len(starts) and len(changing) == 1, (started, changing)
    return started, changing[0]


def _mcq(world: World, owner: str) -> tuple[str, Call]:
    benchmark = world.benchmark(owner, MCQ)
    return benchmark, partial(launch.start_run, benchmark_id=benchmark, model_id=FIRST)


def _custom(world: World, owner: str) -> tuple[str, Call]:
    require_sandbox()
    made = world.do(Principal.web(owner), bundles.upload_bundle, bundle(competition()), "b.zip")
    benchmark = made.benchmark.id
    return benchmark, partial(
        submissions.submit, benchmark_id=benchmark, data=results({}), filename="s.zip"
    )


def _runs_of(world: World, benchmark: str) -> list[tuple[str, str, int]]:
    """(id, status, benchmark version) of every run of the benchmark."""
    query = select(Run.id, Run.status, Run.benchmark_version).where(Run.benchmark_id == benchmark)
    return world.ctx_call(
        WORKER, lambda ctx: [tuple(row) for row in ctx.session.execute(query.order_by(Run.id))]
    )


@pytest.mark.both_backends  # the start and the delete exclude each other by a row lock
@pytest.mark.parametrize("make", [_mcq, _custom], ids=["run", "submission"])
def test_nothing_started_as_the_benchmark_is_deleted_runs(
    world: World, backend: str, monkeypatch: pytest.MonkeyPatch, make: Any
) -> None:
    ana = world.user("ana@example.com")
    benchmark, start = make(world, ana)
    # Three people: starts by one person take turns at their credits, and these start at once
    # (the first runs all freezing the questions while the delete waits).
    team = [ana]
    for email in ("bob@example.com", "cy@example.com"):
        world.user(email)
        team.append(world.collaborator(ana, benchmark, email))
    delete = partial(lifecycle.delete_benchmark, benchmark_id=benchmark)
    _, deleted = _race(world, backend, monkeypatch, [(who, start) for who in team], (ana, delete))
    assert deleted is None
    begin = bundle_execution.begin_bundle_run if make is _custom else execution.begin_run
    for run_id, _, _ in _runs_of(world, benchmark):
        world.do(WORKER, begin, run_id)  # what a worker taking the run does first
    statuses = [status for _, status, _ in _runs_of(world, benchmark)]
    assert statuses and not RUN_ACTIVE.intersection(statuses), statuses


@pytest.mark.both_backends
def test_a_run_started_as_the_questions_change_records_the_version_it_asks(
    world: World, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    ana = world.user("ana@example.com")
    benchmark = world.benchmark(ana, MCQ)
    start = partial(launch.start_run, benchmark_id=benchmark, model_id=FIRST)
    questions = [{**MCQ["questions"][0], "prompt": "Colour of the night sky?"}]
    change = {"questions": questions}
    edit = partial(lifecycle.edit_benchmark, benchmark_id=benchmark, change=change)
    _, edited = _race(world, backend, monkeypatch, [(ana, start)], (ana, edit))
    # The run froze the questions first: replacing them is refused, as after any run.
    assert isinstance(edited, Frozen), edited
    [(_, _, version)] = _runs_of(world, benchmark)
    now = world.do(Principal.web(ana), lifecycle.get_benchmark, benchmark)
    assert (version, now.version, now.question_count) == (1, 1, 2)


def _unpublished(world: World, owner: str, benchmark: str) -> tuple[str, Call]:
    world.do(Principal.web(owner), lifecycle.publish_benchmark, benchmark)
    stranger = world.user("cy@example.com")
    return stranger, partial(lifecycle.unpublish_benchmark, benchmark_id=benchmark)


def _collaborator_removed(world: World, owner: str, benchmark: str) -> tuple[str, Call]:
    world.user("bob@example.com")
    bob = world.collaborator(owner, benchmark, "bob@example.com")
    return bob, partial(members.remove_collaborator, benchmark_id=benchmark, user_id=bob)


def _participant_removed(world: World, owner: str, benchmark: str) -> tuple[str, Call]:
    pat = world.user("pat@example.com")
    world.do(Principal.web(owner), members.add_whitelist_entries, benchmark, ["pat@example.com"])
    world.do(Principal.web(pat), members.join_benchmark, benchmark, True)
    removal = partial(
        members.set_participant_status, benchmark_id=benchmark, user_id=pat, status="removed"
    )
    return pat, removal


@pytest.mark.both_backends
@pytest.mark.parametrize(
    "make",
    [_unpublished, _collaborator_removed, _participant_removed],
    ids=["unpublish", "collaborator", "participant"],
)
def test_access_taken_away_as_a_run_starts_waits_for_the_start(
    world: World, backend: str, monkeypatch: pytest.MonkeyPatch, make: Any
) -> None:
    ana = world.user("ana@example.com")
    benchmark = world.benchmark(ana, MCQ)
    starter, removal = make(world, ana, benchmark)
    start = partial(launch.start_run, benchmark_id=benchmark, model_id=FIRST)
    overtaken: list[bool] = []
    [started], removed = _race(
        world, backend, monkeypatch, [(starter, start)], (ana, removal), overtaken
    )
    # The run was accepted while the access held, and the access went after it: it never
    # went in between, leaving a run accepted from access already taken away.
    assert overtaken == [False]
    assert isinstance(started, launch.RunView) and not isinstance(removed, BenchGenError)


@pytest.mark.both_backends
def test_a_phase_removed_as_a_run_starts_in_it_keeps_the_run(
    world: World, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without the benchmark's lock the removal counted no runs in the phase and committed,
    and the start then wrote a run into a phase that no longer existed."""
    ana = world.user("ana@example.com")
    benchmark = world.benchmark(ana, MCQ)
    second = world.do(Principal.web(ana), phases.add_phase, benchmark, "Final").id
    start = partial(launch.start_run, benchmark_id=benchmark, model_id=FIRST, phase_id=second)
    removal = partial(phases.remove_phase, benchmark_id=benchmark, phase_id=second)
    [started], removed = _race(world, backend, monkeypatch, [(ana, start)], (ana, removal))
    assert isinstance(started, launch.RunView) and started.phase_id == second, started
    assert isinstance(removed, Conflict), removed
    listed = world.do(Principal.web(ana), phases.list_phases, benchmark)
    assert second in [phase.id for phase in listed]


@pytest.mark.both_backends
def test_a_version_removing_a_phase_a_submission_starts_in_is_refused(
    world: World, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_sandbox()
    ana = world.user("ana@example.com")
    two = competition()
    two["phases"].append({**two["phases"][0], "index": 1, "name": "Final"})
    made = world.do(Principal.web(ana), bundles.upload_bundle, bundle(two), "b.zip")
    benchmark = made.benchmark.id
    submit = partial(
        submissions.submit,
        benchmark_id=benchmark,
        data=results({}),
        filename="s.zip",
        phase_index=1,
    )
    upload = partial(
        bundles.upload_bundle_version, benchmark_id=benchmark, data=bundle(), filename="v2.zip"
    )
    [started], uploaded = _race(world, backend, monkeypatch, [(ana, submit)], (ana, upload))
    assert isinstance(started, launch.RunView), started
    assert isinstance(uploaded, Conflict), uploaded  # the Final phase has a run now
    listed = world.do(Principal.web(ana), phases.list_phases, benchmark)
    assert started.phase_id in [phase.id for phase in listed]
