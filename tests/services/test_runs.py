"""Runs end to end through the job queue and worker: credits, freezing, crash recovery,
cancellation, who sees what, the endpoint address rule."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import timedelta
from functools import partial

import pytest
from sqlalchemy import func, select

from benchgen.core.context import Principal
from benchgen.core.errors import (
    Conflict,
    Frozen,
    InsufficientCredits,
    InvalidInput,
    NotFound,
    PermissionDenied,
)
from benchgen.core.permissions import PrincipalKind
from benchgen.db.tables import CreditEntry, Job, Run, RunResult
from benchgen.jobs.handlers import WORKER
from benchgen.jobs.worker import Worker
from benchgen.services import models, queue
from benchgen.services.accounts import _ledger
from benchgen.services.benchmarks import bundles, lifecycle, members
from benchgen.services.runs import execution, launch, leaderboards, results, retries, run_log
from benchgen.services.runtime import Runtime, transaction
from tests.bundle_factory import bundle, competition
from tests.evals.stub_openai import Fault, StubOpenAI, stub_letter
from tests.support import MCQ, OPERATOR, World, export_whole

pytestmark = pytest.mark.both_backends  # job claims, leases and crash recovery

FIRST = "mdl_builtin_first"
QUESTIONS = [
    {
        "prompt": f"Question {i}: pick one",
        "choices": [f"alpha {i}", f"beta {i}", f"gamma {i}"],
        "answer": "ABC"[i % 3],
        "tags": [f"group{i % 2}"],
    }
    for i in range(12)
]
BIG_MCQ = {"title": "Twelve", "format": "mcq", "questions": QUESTIONS}


@pytest.fixture
def stub() -> Iterator[StubOpenAI]:
    with StubOpenAI(latency_s=0.001) as server:
        yield server


@pytest.fixture
def open_loopback(runtime: Runtime) -> Runtime:
    """Let model endpoints use 127.0.0.1 (the stub), as an operator's allow-list would."""
    runtime.settings = runtime.settings.model_copy(update={"model_host_allowlist": "127.0.0.1"})
    return runtime


def priced_model(world: World, stub: StubOpenAI, per_question: int = 2, per_1k: int = 0) -> str:
    spec = {
        "name": "Stub",
        "kind": "openai_compat",
        "endpoint_model": "stub",
        "base_url": stub.base_url,
        "api_key": "sk-test-secret-key-123456789012",
        "price_per_question": per_question,
        "price_per_1k_tokens": per_1k,
        "params": {"max_tokens": 16},
    }
    return world.do(OPERATOR, models.create_platform_model, spec).id


def work_all(runtime: Runtime) -> None:
    worker = Worker(runtime)
    while worker.run_once():
        pass


def ledger_sum(world: World, user_id: str) -> int:
    return world.ctx_call(OPERATOR, lambda ctx: _ledger.balance_of(ctx, user_id))


def test_builtin_run_completes_scores_and_freezes(world: World, runtime: Runtime) -> None:
    ana = world.user("ana@example.com")
    bm = world.benchmark(ana, MCQ)
    web = Principal.web(ana)
    queued = world.do(web, launch.start_run, bm, FIRST)
    assert queued.status == "queued" and queued.question_count == 2
    with pytest.raises(Frozen):
        world.do(web, lifecycle.edit_benchmark, bm, {"questions": []})
    work_all(runtime)
    done = world.do(web, launch.get_run, queued.id)
    assert done.status == "completed" and done.done_count == 2
    assert done.summary["accuracy"] == 0.5  # always "A": right on grass, wrong on the sky
    assert done.scores == {"accuracy": 0.5} and done.cost == 0
    rows = world.do(web, results.list_results, queued.id)
    assert [row["outcome"] for row in rows] == ["wrong", "correct"]
    assert [row["extracted"] for row in rows] == ["A", "A"]
    lines = [line.line for line in world.do(web, run_log.read_log, queued.id)]
    assert lines[0].startswith("Queued") and "Processing: 2/2 (100%)" in lines
    assert lines[-1].startswith("Completed")


def test_priced_run_reserves_settles_and_balances(
    world: World, open_loopback: Runtime, stub: StubOpenAI
) -> None:
    ana = world.user("ana@example.com", credits_=100)
    bm = world.benchmark(ana, BIG_MCQ)
    model = priced_model(world, stub, per_question=2, per_1k=1)
    web = Principal.web(ana)
    estimate = world.do(web, launch.estimate_run, bm, model)
    assert estimate.question_count == 12 and estimate.credits >= 24
    run = world.do(web, launch.start_run, bm, model)
    assert ledger_sum(world, ana) == 100 - estimate.credits
    work_all(open_loopback)
    finished = world.do(web, launch.get_run, run.id)
    assert finished.status == "completed" and finished.error_count == 0
    assert 24 <= finished.cost <= estimate.credits
    assert ledger_sum(world, ana) == 100 - finished.cost
    expected = sum(stub_letter_for(q) == q["answer"] for q in QUESTIONS) / 12
    assert finished.summary["accuracy"] == pytest.approx(expected)
    assert all(count == 1 for count in stub.answered.values()), "a question was asked twice"


def stub_letter_for(question: dict[str, object]) -> str | None:
    from benchgen.evals.prompts import render_prompt
    from benchgen.evals.types import Item

    choices = tuple(str(c) for c in question["choices"])  # type: ignore[attr-defined]
    return stub_letter(render_prompt(Item(0, str(question["prompt"]), choices)))


def test_insufficient_credits_starts_nothing(
    world: World, open_loopback: Runtime, stub: StubOpenAI
) -> None:
    ana = world.user("ana@example.com", credits_=5)
    bm = world.benchmark(ana, BIG_MCQ)
    model = priced_model(world, stub)
    with pytest.raises(InsufficientCredits) as refused:
        world.do(Principal.web(ana), launch.start_run, bm, model)
    assert refused.value.details == {"needed": 24, "balance": 5}
    counts = world.ctx_call(
        OPERATOR,
        lambda ctx: (
            ctx.session.scalar(select(func.count()).select_from(Run)),
            ctx.session.scalar(select(func.count()).select_from(Job)),
            ctx.session.scalar(select(func.count()).select_from(CreditEntry)),
        ),
    )
    assert counts == (0, 0, 1)  # only the grant
    view = world.do(Principal.web(ana), lifecycle.get_benchmark, bm)
    assert not view.questions_frozen


@pytest.mark.usefixtures("quick_retries")
def test_model_errors_are_recorded_and_settled_not_refunded(
    world: World, open_loopback: Runtime
) -> None:
    with StubOpenAI(
        fail=lambda n, prompt: Fault.server_error() if "Question 3" in prompt else None
    ) as stub:
        ana = world.user("ana@example.com", credits_=100)
        bm = world.benchmark(ana, BIG_MCQ)
        model = priced_model(world, stub, per_question=2)
        run = world.do(Principal.web(ana), launch.start_run, bm, model)
        open_loopback.settings = open_loopback.settings.model_copy(update={"run_concurrency": 4})
        work_all(open_loopback)
    finished = world.do(Principal.web(ana), launch.get_run, run.id)
    assert finished.status == "completed" and finished.error_count == 1
    assert finished.cost == 22  # eleven answered questions at 2 credits
    assert ledger_sum(world, ana) == 78
    rows = world.do(Principal.web(ana), results.list_results, run.id)
    failed = [row for row in rows if row["error"]]
    assert [row["position"] for row in failed] == [3] and failed[0]["outcome"] == "error"
    assert "sk-test-secret" not in str(rows)


def test_crashed_worker_is_resumed_without_asking_twice(
    world: World, open_loopback: Runtime, stub: StubOpenAI, clock
) -> None:
    ana = world.user("ana@example.com", credits_=100)
    bm = world.benchmark(ana, BIG_MCQ)
    model = priced_model(world, stub)
    run = world.do(Principal.web(ana), launch.start_run, bm, model)
    # A worker claims the job, records a first batch of answers, then dies without a word.
    with transaction(open_loopback, WORKER) as ctx:
        claimed = queue.claim(ctx, "dead-worker", timedelta(seconds=60))
    assert claimed is not None
    with transaction(open_loopback, WORKER) as ctx:
        plan = execution.begin_run(ctx, run.id)
    assert plan is not None
    first = [_answer(item.index, prompt) for item, prompt in plan.work[:5]]
    with transaction(open_loopback, WORKER) as ctx:
        execution.record_answers(ctx, plan, first)
    assert not Worker(open_loopback).run_once(), "the lease is still held"
    clock.advance(seconds=61)
    work_all(open_loopback)
    finished = world.do(Principal.web(ana), launch.get_run, run.id)
    assert finished.status == "completed" and finished.done_count == 12
    positions = world.ctx_call(
        OPERATOR,
        lambda ctx: list(
            ctx.session.scalars(select(RunResult.position).where(RunResult.run_id == run.id))
        ),
    )
    assert sorted(positions) == list(range(12))
    assert sum(stub.received.values()) == 7  # only the questions the dead worker never did
    assert "Resumed: 7 questions left" in [
        line.line for line in world.do(Principal.web(ana), run_log.read_log, run.id)
    ]
    assert ledger_sum(world, ana) == 100 - finished.cost


class _Crash(BaseException):
    """The process dying: no handler catches it, and the job keeps its lease."""


def test_answers_lost_in_a_crash_are_asked_again_and_charged_once(
    world: World, open_loopback: Runtime, stub: StubOpenAI, clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    import benchgen.jobs.handlers as handlers

    ana = world.user("ana@example.com", credits_=100)
    bm = world.benchmark(ana, BIG_MCQ)
    run = world.do(Principal.web(ana), launch.start_run, bm, priced_model(world, stub))
    record, batches = execution.record_answers, []

    def record_then_die(ctx, plan, answers):
        batches.append(len(answers))
        if len(batches) == 2:  # answered by the model, then lost with the process
            raise _Crash
        return record(ctx, plan, answers)

    monkeypatch.setattr(handlers, "run_items", partial(handlers.run_items, batch_size=5))
    monkeypatch.setattr(handlers.execution, "record_answers", record_then_die)
    with pytest.raises(_Crash):
        Worker(open_loopback).run_once()
    monkeypatch.setattr(handlers.execution, "record_answers", record)
    clock.advance(seconds=61)  # the dead worker's lease runs out
    work_all(open_loopback)
    finished = world.do(Principal.web(ana), launch.get_run, run.id)
    assert finished.status == "completed" and finished.done_count == 12
    kept = batches[0]
    assert sum(stub.received.values()) == 12 + (12 - kept), "only the unrecorded were asked again"
    assert finished.cost == 12 * 2, "every question paid once, lost ones included"
    assert ledger_sum(world, ana) == 100 - finished.cost


def _answer(index: int, prompt: str):
    from benchgen.evals.types import Answer

    return Answer(index, prompt, "ANSWER: A", None, 5, 2, 1, 1)


def test_errors_count_questions_not_failed_extra_samples(world: World, runtime: Runtime) -> None:
    """A failed extra sample counted as an error of the run: its log and the CLI said "2
    errors" where its summary and page said 1."""
    from dataclasses import replace

    ana = world.user("ana@example.com")
    options = {"settings": {"samples": 2}}
    run = world.do(
        Principal.web(ana), launch.start_run, world.benchmark(ana, MCQ), FIRST, None, options
    )
    with transaction(runtime, WORKER) as ctx:
        plan = execution.begin_run(ctx, run.id)
    assert plan is not None
    answers = []
    for item, prompt in plan.work:
        answer = replace(_answer(item.index, prompt), sample=item.sample)
        failed = item.sample == 1 or item.index == 0
        answers.append(replace(answer, raw=None, error="timeout") if failed else answer)
    with transaction(runtime, WORKER) as ctx:
        execution.record_answers(ctx, plan, answers)
        execution.finish_run(ctx, run.id, cancelled=False)
    done = world.do(Principal.web(ana), launch.get_run, run.id)
    assert done.error_count == done.summary["errors"] == 1  # question 1 only
    lines = [line.line for line in world.do(Principal.web(ana), run_log.read_log, run.id)]
    assert "Completed: 2/2 questions, 1 errors, 0 credits" in lines


def test_a_run_whose_every_question_errored_fails_saying_why(
    world: World, runtime: Runtime
) -> None:
    """It ended "completed, accuracy 0%" and could go on the leaderboard."""
    from dataclasses import replace

    ana = world.user("ana@example.com")
    run = world.do(Principal.web(ana), launch.start_run, world.benchmark(ana, MCQ), FIRST)
    with transaction(runtime, WORKER) as ctx:
        plan = execution.begin_run(ctx, run.id)
    assert plan is not None
    down = [
        replace(_answer(item.index, prompt), raw=None, error="connection refused")
        for item, prompt in plan.work
    ]
    with transaction(runtime, WORKER) as ctx:
        execution.record_answers(ctx, plan, down)
        execution.finish_run(ctx, run.id, cancelled=False)
    done = world.do(Principal.web(ana), launch.get_run, run.id)
    assert done.status == "failed" and done.cost == 0
    assert done.error == "Every question failed; the first: connection refused"
    with pytest.raises(Conflict, match="completed"):
        world.do(Principal.web(ana), leaderboards.add_to_leaderboard, run.id)
    again = world.do(Principal.web(ana), retries.retry_errored, run.id)
    assert again.retry_of == run.id and again.question_count == 2


def test_run_given_up_after_crashes_fails_with_full_refund(
    world: World, open_loopback: Runtime, stub: StubOpenAI, clock
) -> None:
    ana = world.user("ana@example.com", credits_=100)
    bm = world.benchmark(ana, BIG_MCQ)
    run = world.do(Principal.web(ana), launch.start_run, bm, priced_model(world, stub))
    for _ in range(3):  # every attempt's worker dies holding the lease
        with transaction(open_loopback, WORKER) as ctx:
            assert queue.claim(ctx, "doomed", timedelta(seconds=60)) is not None
        clock.advance(seconds=61)
    assert Worker(open_loopback).run_once()
    failed = world.do(Principal.web(ana), launch.get_run, run.id)
    assert failed.status == "failed" and failed.cost == 0 and "gave up" in failed.error
    assert ledger_sum(world, ana) == 100
    assert not Worker(open_loopback).run_once()


def test_handler_exception_retries_then_refunds(
    world: World, runtime: Runtime, monkeypatch: pytest.MonkeyPatch, clock
) -> None:
    ana = world.user("ana@example.com")
    run = world.do(Principal.web(ana), launch.start_run, world.benchmark(ana, MCQ), FIRST)
    import benchgen.jobs.handlers as handlers

    def explode(*_: object) -> None:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(handlers.execution, "begin_run", explode)
    for _ in range(3):
        assert Worker(runtime).run_once()
        clock.advance(minutes=5)
    failed = world.do(Principal.web(ana), launch.get_run, run.id)
    assert failed.status == "failed" and "disk on fire" in failed.error


def test_cancel_queued_refunds_and_running_stops(
    world: World, open_loopback: Runtime, stub: StubOpenAI
) -> None:
    ana = world.user("ana@example.com", credits_=100)
    bm = world.benchmark(ana, BIG_MCQ)
    model = priced_model(world, stub)
    web = Principal.web(ana)
    queued = world.do(web, launch.start_run, bm, model)
    cancelled = world.do(web, launch.cancel_run, queued.id)
    assert cancelled.status == "cancelled" and ledger_sum(world, ana) == 100
    with pytest.raises(Conflict):
        world.do(web, launch.cancel_run, queued.id)
    assert not Worker(open_loopback).run_once(), "a cancelled job must not run"
    running = world.do(web, launch.start_run, bm, model)
    with transaction(open_loopback, WORKER) as ctx:
        queue.claim(ctx, "w", timedelta(seconds=60))
        execution.begin_run(ctx, running.id)
    assert world.do(web, launch.cancel_run, running.id).status == "running"
    assert world.do(web, launch.cancel_run, running.id).status == "running"
    asked = [entry.line for entry in world.do(web, run_log.read_log, running.id)]
    assert asked.count("Cancellation requested") == 1, "asking again changes nothing"
    with transaction(open_loopback, WORKER) as ctx:
        assert execution.is_cancel_requested(ctx, running.id)
        execution.finish_run(ctx, running.id, cancelled=True)
    stopped = world.do(web, launch.get_run, running.id)
    assert stopped.status == "cancelled" and stopped.cost == 0
    assert ledger_sum(world, ana) == 100


def test_who_sees_what(world: World, runtime: Runtime) -> None:
    ana, pia, sam = (world.user(f"{n}@example.com") for n in ("ana", "pia", "sam"))
    bm = world.benchmark(ana, MCQ)
    world.do(Principal.web(ana), lifecycle.publish_benchmark, bm)
    world.do(Principal.web(pia), members.join_benchmark, bm, True)
    theirs = world.do(Principal.web(pia), launch.start_run, bm, FIRST)
    work_all(runtime)
    own_view = world.do(Principal.web(pia), launch.get_run, theirs.id)
    assert not own_view.detail_visible and "accuracy" in own_view.summary
    assert "per_tag" not in own_view.summary
    rows = world.do(Principal.web(pia), results.list_results, theirs.id)
    assert rows[0]["raw"] == "ANSWER: A"
    assert not {"outcome", "correct", "expected", "extracted"} & set(rows[0])
    _, csv_text = world.do(Principal.web(pia), export_whole, theirs.id, "csv")
    assert "expected" not in csv_text.splitlines()[0]
    owner_rows = world.do(Principal.web(ana), results.list_results, theirs.id)
    assert owner_rows[0]["expected"] == "B" and owner_rows[0]["correct"] is False
    media, jsonl = world.do(Principal.web(ana), export_whole, theirs.id, "jsonl")
    assert media == "application/x-ndjson" and '"expected": "B"' in jsonl
    for outsider in (sam,):
        with pytest.raises(NotFound):
            world.do(Principal.web(outsider), launch.get_run, theirs.id)
    with pytest.raises(InvalidInput):
        world.do(Principal.web(ana), export_whole, theirs.id, "xml")
    listed = world.do(Principal.web(ana), launch.list_runs)
    assert [view.id for view in listed] == [theirs.id]
    assert world.do(Principal.web(sam), launch.list_runs) == []


@pytest.mark.parametrize("backend", ["postgres"])  # SQLite runs one writer at a time
def test_a_cancel_racing_a_starting_worker_never_refunds_a_run_that_runs(
    world: World, open_loopback: Runtime, stub: StubOpenAI
) -> None:
    """Both read "queued": the cancel refunded the run in full and the worker ran it to the
    end all the same (3 times in 40 launch-and-cancel tries)."""
    ana = world.user("ana@example.com", credits_=10_000)
    bm = world.benchmark(ana, MCQ)
    model = priced_model(world, stub)
    web = Principal.web(ana)
    for _ in range(12):
        run = world.do(web, launch.start_run, bm, model)
        started = _start_and_cancel_at_once(world, open_loopback, web, run.id)
        after = world.do(web, launch.get_run, run.id)
        if started:  # the worker started it: a stop was asked, nothing refunded
            assert after.status == "running", after.status
            with transaction(open_loopback, WORKER) as ctx:
                assert execution.is_cancel_requested(ctx, run.id)
                execution.finish_run(ctx, run.id, cancelled=True)
        else:
            assert after.status == "cancelled"
    assert ledger_sum(world, ana) == 10_000  # nothing ran, nothing was charged


def test_deleting_a_benchmark_stops_its_runs_and_charges_only_what_ran(
    world: World, open_loopback: Runtime, stub: StubOpenAI
) -> None:
    """Its runs went on and charged their launchers, who could no longer see or cancel them."""
    ana, eve = world.user("ana@example.com"), world.user("eve@example.com", credits_=100)
    bm = world.benchmark(ana, MCQ)
    world.do(Principal.web(ana), lifecycle.publish_benchmark, bm)
    model = priced_model(world, stub)
    web = Principal.web(eve)
    queued = world.do(web, launch.start_run, bm, model).id
    started = world.do(web, launch.start_run, bm, model).id
    with transaction(open_loopback, WORKER) as ctx:
        assert execution.begin_run(ctx, started) is not None
    world.do(Principal.web(ana), lifecycle.delete_benchmark, bm)
    with transaction(open_loopback, WORKER) as ctx:
        assert execution.is_cancel_requested(ctx, started)  # its engine stops between answers
        assert execution.begin_run(ctx, queued) is None
        execution.finish_run(ctx, started, cancelled=True)
    statuses = world.ctx_call(
        OPERATOR, lambda ctx: [ctx.session.get(Run, r).status for r in (queued, started)]
    )
    assert statuses == ["cancelled", "cancelled"]
    assert ledger_sum(world, eve) == 100  # neither asked the model anything


def _start_and_cancel_at_once(world: World, runtime: Runtime, web: Principal, run_id: str) -> bool:
    """A worker starting the run and its owner cancelling it at the same moment; whether the
    worker got a plan (started it)."""
    both = threading.Barrier(2)
    planned: list[object] = []

    def start() -> None:
        both.wait()
        with transaction(runtime, WORKER) as ctx:
            planned.append(execution.begin_run(ctx, run_id))

    def cancel() -> None:
        both.wait()
        world.do(web, launch.cancel_run, run_id)

    threads = [threading.Thread(target=start), threading.Thread(target=cancel)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    return planned[0] is not None


def test_runs_of_a_benchmark_one_cannot_see_are_not_found_not_an_empty_list(world: World) -> None:
    ana, sam = world.user("ana@example.com"), world.user("sam@example.com")
    private = world.benchmark(ana, MCQ)
    with pytest.raises(NotFound, match="No such benchmark"):
        world.do(Principal.web(sam), launch.list_runs, private)
    with pytest.raises(NotFound):
        world.do(Principal.web(ana), launch.list_runs, "bm_nosuchbenchmark")
    assert world.do(Principal.web(ana), launch.list_runs, private) == []


def test_tokens_need_the_runs_scope_and_phase_dates_hold(world: World, clock) -> None:
    ana = world.user("ana@example.com")
    bm = world.benchmark(ana, MCQ)
    reader = world.principal(PrincipalKind.API, ana, frozenset({"read"}))  # type: ignore[arg-type]
    with pytest.raises(PermissionDenied):
        world.do(reader, launch.start_run, bm, FIRST)
    from benchgen.services.benchmarks import phases

    phase = world.do(Principal.web(ana), phases.list_phases, bm)[0]
    world.ctx_call(OPERATOR, lambda ctx: _set_phase_end(ctx, phase.id, clock.now()))
    clock.advance(seconds=1)
    with pytest.raises(Conflict, match="not open"):
        world.do(Principal.web(ana), launch.start_run, bm, FIRST)


def _set_phase_end(ctx, phase_id, moment) -> None:
    from benchgen.db.tables import Phase

    ctx.session.get(Phase, phase_id).ends_at = moment


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8000/v1",
        "http://localhost/v1",
        "http://10.0.0.5/v1",
        "http://169.254.169.254/latest",
        "http://[::1]/v1",
        "ftp://example.com/v1",
    ],
)
def test_endpoint_address_rule(world: World, url: str) -> None:
    ana = world.user("ana@example.com")
    spec = {"name": "Mine", "endpoint_model": "m", "base_url": url}
    with pytest.raises(InvalidInput) as refused:
        world.do(Principal.web(ana), models.create_model, spec)
    assert refused.value.errors[0]["loc"] == ["base_url"]
    assert world.do(Principal.web(ana), models.list_models)[-1].owner == "platform"


def test_allow_list_opens_a_host_and_keys_are_never_shown(
    world: World, open_loopback: Runtime
) -> None:
    ana, bob = world.user("ana@example.com"), world.user("bob@example.com")
    spec = {
        "name": "Mine",
        "endpoint_model": "m",
        "base_url": "http://127.0.0.1:9/v1",
        "api_key": "sk-very-secret-value-0123456789",
    }
    made = world.do(Principal.web(ana), models.create_model, spec)
    assert made.has_api_key and "secret" not in repr(made)
    stored = world.ctx_call(
        OPERATOR,
        lambda ctx: (
            ctx.session.get(
                __import__("benchgen.db.tables", fromlist=["Model"]).Model, made.id
            ).api_key_enc
        ),
    )
    assert "sk-very-secret" not in stored
    rotated = world.do(Principal.web(ana), models.update_model, made.id, {"api_key": "sk-new"})
    assert rotated.has_api_key
    with pytest.raises(NotFound):
        world.do(Principal.web(bob), models.get_model, made.id)
    with pytest.raises(InvalidInput):
        world.do(Principal.web(ana), models.create_model, {**spec, "kind": "local_gguf"})


@pytest.mark.usefixtures("open_loopback")
def test_a_users_model_never_takes_a_platform_models_name(world: World) -> None:
    """Two models of one name, a free baseline and a paid endpoint: picked by name, either."""
    ana = world.user("ana@example.com")
    baseline = world.do(Principal.web(ana), models.get_model, "mdl_builtin_first").name
    spec = {"endpoint_model": "m", "base_url": "http://127.0.0.1:9/v1"}
    message = [{"loc": ["name"], "msg": "is the name of a platform model; choose another"}]
    with pytest.raises(InvalidInput) as refused:
        world.do(Principal.web(ana), models.create_model, {**spec, "name": baseline.upper()})
    assert refused.value.errors == message
    mine = world.do(Principal.web(ana), models.create_model, {**spec, "name": "Mine"})
    with pytest.raises(InvalidInput) as renamed:
        world.do(Principal.web(ana), models.update_model, mine.id, {"name": baseline})
    assert renamed.value.errors == message
    assert world.do(Principal.web(ana), models.get_model, mine.id).name == "Mine"


@pytest.mark.usefixtures("open_loopback")
def test_a_custom_run_above_its_cap_starts_nothing(world: World, stub: StubOpenAI) -> None:
    ana = world.user("ana@example.com", credits_=100_000)
    web = Principal.web(ana)
    # No solutions: the upload runs no program, so no sandbox is needed.
    custom = world.do(web, bundles.upload_bundle, bundle(competition(solutions=[])), "c.zip")
    model = priced_model(world, stub)
    bm = custom.benchmark.id
    estimate = world.do(web, launch.estimate_run, bm, model)
    capped = {"max_credits": estimate.credits - 1}
    for refused in (launch.preview_run, launch.start_run):
        with pytest.raises(Conflict, match="above your cap"):
            world.do(web, refused, bm, model, None, capped)
    assert world.do(web, launch.list_runs, bm, 10, 0) == []
