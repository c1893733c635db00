"""A database that goes away for a moment, or a worker that stalls past its lease, ends no
worker thread and lets no stale worker write: the loop and its heartbeat wait and go on, an
outage is "unavailable" (503, nothing changed), and only the lease's holder records answers."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import psycopg
import pytest
from sqlalchemy import exc as sa_exc
from sqlalchemy import func, select, text
from sqlalchemy.engine import make_url
from typer.testing import CliRunner, Result

from benchgen.cli import app
from benchgen.cli import evaluation as cli_evaluation
from benchgen.core.clock import ManualClock
from benchgen.core.config import Settings
from benchgen.core.context import Principal
from benchgen.core.errors import Unavailable
from benchgen.db.session import is_busy
from benchgen.db.tables import Run, RunResult
from benchgen.evals.engine import EngineReport
from benchgen.evals.types import Answer
from benchgen.jobs import handlers
from benchgen.jobs import worker as worker_module
from benchgen.jobs.handlers import WORKER
from benchgen.jobs.worker import MAX_BACKOFF_S, Worker, _Heartbeat
from benchgen.services import queue
from benchgen.services.queue import Claimed
from benchgen.services.runs import execution, launch
from benchgen.services.runs.execution import RunPlan
from benchgen.services.runtime import Runtime, transaction
from tests.conftest import PG_ADMIN_URL
from tests.support import MCQ, OPERATOR, World, looping

FIRST = "mdl_builtin_first"


def _refused() -> sa_exc.OperationalError:
    """What SQLAlchemy raises when PostgreSQL refuses the connection (psycopg gives no SQLSTATE)."""
    orig = psycopg.OperationalError('connection failed: connection to server at "127.0.0.1"')
    return sa_exc.OperationalError("SELECT 1", {}, orig)


LOST: dict[str, sa_exc.SQLAlchemyError] = {
    "refused": _refused(),
    "admin shutdown": sa_exc.OperationalError(
        "SELECT 1", {}, psycopg.errors.AdminShutdown("terminating connection")
    ),
    "crash shutdown": sa_exc.OperationalError(
        "SELECT 1", {}, psycopg.errors.CrashShutdown("terminating connection")
    ),
    "connection failure": sa_exc.OperationalError(
        "SELECT 1", {}, psycopg.errors.ConnectionFailure("server closed the connection")
    ),
    "invalidated": sa_exc.OperationalError(
        "SELECT 1", {}, Exception("gone"), connection_invalidated=True
    ),
    "disconnection": sa_exc.DisconnectionError("the pool found the connection dead"),
}


@pytest.mark.parametrize("error", LOST.values(), ids=LOST.keys())
def test_a_lost_or_refused_connection_counts_as_unavailable(error: Exception) -> None:
    assert is_busy(error)


def test_a_faulty_statement_is_still_no_outage() -> None:
    undefined = psycopg.errors.UndefinedTable("relation does not exist")
    assert not is_busy(sa_exc.ProgrammingError("SELECT 1", {}, undefined))
    assert not is_busy(sa_exc.IntegrityError("INSERT", {}, psycopg.errors.UniqueViolation("dup")))


@pytest.mark.parametrize("backend", ["sqlite"])
def test_a_transaction_that_loses_its_connection_is_unavailable(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*_: Any, **__: Any) -> Any:
        raise _refused()

    monkeypatch.setattr(queue, "claim", refuse)
    with pytest.raises(Unavailable, match="out of reach"), transaction(runtime, WORKER) as ctx:
        queue.claim(ctx, "w", timedelta(seconds=5))


def _failing_then_idle(failures: list[Exception]) -> tuple[Any, threading.Event]:
    """A `queue.claim` that raises each of `failures` once, then finds nothing to do."""
    left = list(failures)
    idle = threading.Event()

    def claim(*_: Any, **__: Any) -> None:
        if left:
            raise left.pop(0)
        idle.set()

    return claim, idle


@pytest.mark.parametrize("backend", ["sqlite"])  # no SQL behaviour differs here
def test_no_error_of_one_round_ends_the_worker_thread(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An OperationalError during a database restart ended each worker thread; the process
    stayed up and queued jobs waited for ever."""
    claim, idle = _failing_then_idle([_refused(), RuntimeError("a bug"), KeyError("x")])
    monkeypatch.setattr(queue, "claim", claim)
    with looping(Worker(runtime, poll_s=0.01), join_s=5) as thread:
        assert idle.wait(5), "the worker stopped claiming after an error"
        assert thread.is_alive()
    assert not thread.is_alive()


@pytest.mark.parametrize("backend", ["sqlite"])
def test_failed_rounds_in_a_row_wait_longer_up_to_a_limit(runtime: Runtime) -> None:
    working = Worker(runtime, poll_s=0.25)
    waits = [working._backoff(failures) for failures in (1, 2, 3, 10, 5000)]
    assert waits == [0.25, 0.5, 1.0, MAX_BACKOFF_S, MAX_BACKOFF_S]


@pytest.mark.parametrize("backend", ["sqlite"])
def test_a_failing_heartbeat_beats_again_and_keeps_the_lease(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An OperationalError ended the heartbeat thread silently: the lease ran out while the
    handler went on, and a second worker ran the same job."""
    beats: list[int] = []
    third = threading.Event()

    def heartbeat(*_: Any, **__: Any) -> bool:
        beats.append(1)
        if len(beats) == 1:
            raise _refused()
        if len(beats) == 2:
            raise RuntimeError("a bug")
        third.set()
        return True

    monkeypatch.setattr(worker_module.queue, "heartbeat", heartbeat)
    working = Worker(runtime, lease=timedelta(milliseconds=30))
    job = Claimed("job_x", "run", {}, 1, False)
    with _Heartbeat(working, job):
        assert third.wait(5), "the heartbeat stopped after an error"
    assert not job.lease_lost.is_set()


@pytest.fixture
def worker_env(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    """`benchgen worker` on the test's database, polling it (no broker)."""
    monkeypatch.setenv("BENCHGEN_DATA_DIR", str(settings.data_dir))
    monkeypatch.setenv("BENCHGEN_DATABASE_URL", settings.resolved_database_url())
    monkeypatch.delenv("BENCHGEN_BROKER_URL", raising=False)


@pytest.mark.parametrize("backend", ["sqlite"])
@pytest.mark.usefixtures("worker_env")
def test_a_polling_worker_whose_thread_ended_exits_nonzero(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The process stayed up with no worker thread left, so no supervisor restarted it."""
    ended = threading.Thread(target=lambda: None)
    ended.start()
    ended.join()

    def start(*_: Any) -> list[tuple[Worker, threading.Thread]]:
        return [(Worker(runtime), ended)]

    monkeypatch.setattr(cli_evaluation, "start_workers", start)
    results: list[Result] = []
    # In a thread: a command that never notices stays up for ever, and the test must end.
    command = threading.Thread(
        target=lambda: results.append(CliRunner().invoke(app, ["worker", "--threads", "1"])),
        daemon=True,
    )
    command.start()
    command.join(10)
    assert results, "the worker stayed up with no worker thread left"
    result = results[0]
    assert result.exit_code == 1
    assert "worker thread stopped unexpectedly" in " ".join(result.output.split())


# A worker that stalled past its lease and woke after another took the job over.


def _stale_and_current(
    world: World, runtime: Runtime, clock: ManualClock
) -> tuple[RunPlan, Claimed, Claimed]:
    """A run planned by a worker whose lease then ran out, and the job as the worker that took
    it over holds it."""
    ana = world.user("ana@example.com", credits_=100)
    run_id = world.do(Principal.web(ana), launch.start_run, world.benchmark(ana, MCQ), FIRST).id
    with transaction(runtime, WORKER) as ctx:
        stale = queue.claim(ctx, "stalled-worker", timedelta(seconds=15))
    with transaction(runtime, WORKER) as ctx:
        plan = execution.begin_run(ctx, run_id)
    assert stale is not None and plan is not None
    clock.advance(seconds=20)
    with transaction(runtime, WORKER) as ctx:
        current = queue.claim(ctx, "the-other-worker", timedelta(seconds=15))
    assert current is not None and current.id == stale.id
    return plan, stale, current


def _answers(plan: RunPlan, count: int) -> list[Answer]:
    return [
        Answer(item.index, prompt, "A", None, 1, 1, 5, 1, sample=item.sample)
        for item, prompt in plan.work[:count]
    ]


def _results(world: World, run_id: str) -> tuple[int, int]:
    """(result rows, done_count) of the run."""

    def read(ctx: Any) -> tuple[int, int]:
        rows = ctx.session.scalar(
            select(func.count()).select_from(RunResult).where(RunResult.run_id == run_id)
        )
        return int(rows or 0), ctx.session.get(Run, run_id).done_count

    result: tuple[int, int] = world.ctx_call(OPERATOR, read)
    return result


@pytest.mark.both_backends  # the lease check locks the job's row on PostgreSQL
def test_a_worker_that_lost_its_lease_records_no_answer(
    world: World, runtime: Runtime, clock: ManualClock
) -> None:
    """Its in-flight answers were written before its heartbeat noticed, and the batch of the
    worker that had taken the run over then failed on the same questions."""
    plan, stale, current = _stale_and_current(world, runtime, clock)
    handlers._recorder(runtime, stale, plan)(_answers(plan, 2))
    assert _results(world, plan.run_id) == (0, 0)
    assert stale.lease_lost.is_set()
    handlers._recorder(runtime, current, plan)(_answers(plan, 2))  # no duplicate key
    assert not current.lease_lost.is_set()
    assert _results(world, plan.run_id) == (2, 2)


@pytest.mark.both_backends
def test_a_worker_that_lost_its_lease_does_not_close_the_run(
    world: World, runtime: Runtime, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Taken over after its last batch, it settled and closed the run the other was running."""
    ana = world.user("ana@example.com", credits_=100)
    run_id = world.do(Principal.web(ana), launch.start_run, world.benchmark(ana, MCQ), FIRST).id
    with transaction(runtime, WORKER) as ctx:
        stale = queue.claim(ctx, "stalled-worker", timedelta(seconds=15))
    assert stale is not None

    async def stalled_after_answering(*_: Any) -> EngineReport:
        clock.advance(seconds=20)  # its lease ran out: another worker takes the job over
        with transaction(runtime, WORKER) as ctx:
            assert queue.claim(ctx, "the-other-worker", timedelta(seconds=15)) is not None
        return EngineReport()

    monkeypatch.setattr(handlers, "_drive", stalled_after_answering)
    handlers.execute_run(runtime, stale)
    status = world.ctx_call(OPERATOR, lambda ctx: ctx.session.get(Run, run_id).status)
    assert status == "running"
    assert stale.lease_lost.is_set()


# A real outage of PostgreSQL: connections ended and refused for a moment.


@pytest.fixture
def outage(runtime: Runtime, pg_database: Any) -> Iterator[Any]:
    """A switch that ends the runtime's connections and refuses new ones (`outage(True)`),
    or lets them in again (`outage(False)`); it always ends with the database open."""
    name = make_url(runtime.settings.resolved_database_url()).database
    admin = psycopg.connect(PG_ADMIN_URL, autocommit=True)

    def switch(down: bool) -> None:
        admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS {str(not down).upper()}')
        if down:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = %s AND pid <> pg_backend_pid()",
                (name,),
            )

    try:
        yield switch
    finally:
        switch(False)
        admin.close()
        pg_database[1].dispose()  # the reset's pooled connection was ended too


@pytest.mark.parametrize("backend", ["postgres"])
def test_a_postgresql_outage_is_unavailable_then_passes(runtime: Runtime, outage: Any) -> None:
    with transaction(runtime, WORKER) as ctx:
        ctx.session.execute(text("SELECT 1"))  # a pooled connection, about to be ended
    outage(True)
    with pytest.raises(Unavailable), transaction(runtime, WORKER) as ctx:
        ctx.session.execute(text("SELECT 1"))
    outage(False)
    with transaction(runtime, WORKER) as ctx:
        assert ctx.session.scalar(text("SELECT 1")) == 1


@pytest.mark.parametrize("backend", ["postgres"])
def test_a_worker_rides_out_a_postgresql_outage(
    world: World, runtime: Runtime, outage: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker threads of `benchgen worker` died on the first refused connection."""
    failed = threading.Event()
    claim = queue.claim

    def noting(*args: Any, **kwargs: Any) -> Claimed | None:
        try:
            return claim(*args, **kwargs)
        except Exception:
            failed.set()
            raise

    monkeypatch.setattr(queue, "claim", noting)
    with looping(Worker(runtime, poll_s=0.02)) as thread:
        outage(True)
        assert failed.wait(5), "the worker never met the outage"
        outage(False)
        ana = world.user("ana@example.com", credits_=100)
        web = Principal.web(ana)
        run_id = world.do(web, launch.start_run, world.benchmark(ana, MCQ), FIRST).id
        _wait_for(lambda: world.do(web, launch.get_run, run_id).status == "completed")
        assert thread.is_alive()


def _wait_for(done: Any, timeout_s: float = 15) -> None:
    stop = threading.Event()
    for _ in range(int(timeout_s / 0.05)):
        if done():
            return
        stop.wait(0.05)
    raise AssertionError("the worker never did the job after the outage")
