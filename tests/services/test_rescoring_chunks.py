"""Rescoring in chunks: the same verdicts as in one go, and other writers get in between."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy import delete, select, update

from benchgen.core.context import Context, Principal
from benchgen.core.errors import Conflict
from benchgen.db.tables import Question, Run, RunResult
from benchgen.evals.scorers import registry
from benchgen.jobs.worker import Worker
from benchgen.services.accounts import credits
from benchgen.services.runs import launch, rescoring
from benchgen.services.runtime import Runtime, transaction
from tests.support import OPERATOR, World

RANDOM = "mdl_builtin_random"
CHUNK = 7  # 40 answers: five full chunks and a short one
# The random baseline answers one word of the prompt: "blue" scores wrong by exact match and
# right by token F1 (0.67 against "blue sky"), so applying F1 changes some verdicts, not all.
WORDS = ("blue", "sky", "green", "grass", "red", "rose", "blue sky")
SPEC = {
    "title": "Pairs",
    "format": "qa",
    "questions": [
        {"prompt": f"Item {i}: blue sky green grass red rose", "answer": WORDS[i % len(WORDS)]}
        for i in range(40)
    ],
}
F1 = {"method": "f1"}


def _finished_run(world: World, runtime: Runtime, user: str, benchmark: str) -> str:
    run_id = world.do(Principal.web(user), launch.start_run, benchmark, RANDOM).id
    while Worker(runtime).run_once():
        pass
    return run_id


def _stored(world: World, run_id: str) -> tuple[list[tuple[Any, ...]], tuple[Any, ...]]:
    def read(ctx: Context) -> tuple[list[tuple[Any, ...]], tuple[Any, ...]]:
        rows = ctx.session.execute(
            select(
                RunResult.position,
                RunResult.outcome,
                RunResult.score,
                RunResult.extracted,
                RunResult.reasoning,
            )
            .where(RunResult.run_id == run_id)
            .order_by(RunResult.position)
        )
        run = ctx.session.get(Run, run_id)
        assert run is not None
        return [tuple(row) for row in rows], (run.scoring, run.summary, run.scores)

    return world.ctx_call(OPERATOR, read)


def _two_runs(world: World, runtime: Runtime) -> tuple[Principal, str, str]:
    ana = world.user("ana@example.com")
    benchmark = world.benchmark(ana, SPEC)
    first = _finished_run(world, runtime, ana, benchmark)
    return Principal.web(ana), first, _finished_run(world, runtime, ana, benchmark)


@pytest.mark.both_backends
@pytest.mark.parametrize("chunk", [CHUNK, 8], ids=["a short last chunk", "full chunks only"])
def test_chunked_and_whole_give_the_same_verdicts(
    world: World, runtime: Runtime, chunk: int
) -> None:
    web, chunked, whole = _two_runs(world, runtime)
    assert _stored(world, chunked) == _stored(world, whole), "the baseline is deterministic"
    results = {}
    for run_id, rows in ((chunked, chunk), (whole, rescoring.CHUNK_ROWS)):
        dry = world.do(web, rescoring.rescore_run, run_id, F1, False, rows)
        applied = world.do(web, rescoring.rescore_run, run_id, F1, True, rows)
        assert (dry.after, dry.changed_count, dry.changes) == (
            applied.after,
            applied.changed_count,
            applied.changes,
        )
        results[run_id] = applied
    assert 0 < results[whole].changed_count < len(SPEC["questions"])
    same = ("before", "after", "changed_count", "changes", "scoring")
    assert [getattr(results[chunked], name) for name in same] == [
        getattr(results[whole], name) for name in same
    ]
    assert _stored(world, chunked) == _stored(world, whole)
    again = world.do(web, rescoring.rescore_run, chunked, None, False, chunk)
    assert again.changed_count == 0, "every chunk was stored"


@pytest.mark.both_backends
@pytest.mark.parametrize(
    ("budget", "fewest_reads"), [(1, 39), (12, 5)], ids=["one answer a chunk", "a few a chunk"]
)
def test_long_replies_make_shorter_chunks_with_the_same_verdicts(
    world: World,
    runtime: Runtime,
    monkeypatch: pytest.MonkeyPatch,
    budget: int,
    fewest_reads: int,
) -> None:
    web, short, whole = _two_runs(world, runtime)
    expected = world.do(web, rescoring.rescore_run, whole, F1, True)
    # The baseline's replies are single words: a budget of 12 characters holds a few, one of a
    # single character only the first reply of each chunk, which comes all the same.
    monkeypatch.setattr(rescoring, "REPLY_CHARS_PER_CHUNK", budget)
    reads: list[int] = []
    read_apart = rescoring._Reader._document_apart

    def counted(reader: rescoring._Reader, engine: Any, after: int) -> str:
        reads.append(after)
        return read_apart(reader, engine, after)

    monkeypatch.setattr(rescoring._Reader, "_document_apart", counted)
    applied = world.do(web, rescoring.rescore_run, short, F1, True)
    # Read after the first chunk, in order; 39 reads at most for the other 39 answers.
    assert reads == sorted(reads) and fewest_reads <= len(reads) <= 39
    same = ("before", "after", "changed_count", "changes", "scoring")
    assert [getattr(applied, name) for name in same] == [getattr(expected, name) for name in same]
    assert _stored(world, short) == _stored(world, whole)


@pytest.mark.both_backends
@pytest.mark.parametrize("rows", [CHUNK, rescoring.CHUNK_ROWS])
def test_answers_to_questions_the_benchmark_lost_stop_it_before_any_write(
    world: World, runtime: Runtime, rows: int
) -> None:
    web, run_id, _ = _two_runs(world, runtime)
    before = _stored(world, run_id)

    def drop_last_question(ctx: Context) -> None:
        run = ctx.session.get(Run, run_id)
        assert run is not None
        ctx.session.execute(
            delete(Question).where(
                Question.benchmark_id == run.benchmark_id, Question.position == 39
            )
        )

    world.ctx_call(OPERATOR, drop_last_question)
    with pytest.raises(Conflict, match="no longer has"):
        world.do(web, rescoring.rescore_run, run_id, F1, True, rows)
    assert _stored(world, run_id) == before, "nothing was written, not even the claim"


LETTERS = {
    "title": "Letters",
    "format": "mcq",
    "questions": [
        {"prompt": f"Item {i}", "choices": ["one", "two", "three"], "answer": "ABC"[i % 3]}
        for i in range(40)
    ],
}


@pytest.mark.both_backends
@pytest.mark.parametrize("rows", [CHUNK, rescoring.CHUNK_ROWS])
def test_log_prob_scoring_reads_each_answers_stored_letters(
    world: World, runtime: Runtime, rows: int
) -> None:
    ana = world.user("ana@example.com")
    run_id = _finished_run(world, runtime, ana, world.benchmark(ana, LETTERS))

    def letters(position: int) -> dict[str, float]:
        # By position: the right letter favoured, a wrong one, or none of the three choices.
        if position % 3 == 2:
            return {"D": -0.5}
        best = "ABC"[position % 3] if position % 3 == 0 else "ABC"[(position + 1) % 3]
        return {"A": -3.5, "B": -2.25, "C": -1.125, best: -0.0625}

    def store_letters(ctx: Context) -> None:
        for position in range(40):
            ctx.session.execute(
                update(RunResult)
                .where(RunResult.run_id == run_id, RunResult.position == position)
                .values(letter_logprobs=letters(position))
            )

    world.ctx_call(OPERATOR, store_letters)
    logprob = {"method": "choice_logprob"}
    applied = world.do(Principal.web(ana), rescoring.rescore_run, run_id, logprob, True, rows)
    outcomes = [row[1] for row in _stored(world, run_id)[0]]
    assert outcomes == [("correct", "wrong", "no_answer")[i % 3] for i in range(40)]
    assert applied.after["correct"] == 14 and applied.after["no_answer"] == 13


def _on_answer(
    monkeypatch: pytest.MonkeyPatch, number: int, action: Callable[[], None]
) -> list[int]:
    """Call `action` once, while the next rescoring scores its `number`-th answer."""
    original, fired = registry.stored_scorer, []

    def hooked(settings: Any) -> registry.StoredScorer:
        scorer, seen = original(settings), itertools.count(1)

        def score(*args: Any) -> Any:
            if next(seen) == number and not fired:
                fired.append(number)
                action()
            return scorer(*args)

        return score

    monkeypatch.setattr(registry, "stored_scorer", hooked)
    return fired


def _in_thread(work: Callable[[], None]) -> list[BaseException | None]:
    """Run `work` in another thread and wait for it (10 s at most); its outcome, if it ended."""
    outcome: list[BaseException | None] = []

    def target() -> None:
        try:
            work()
        except BaseException as exc:  # reported to the test, not lost in the thread
            outcome.append(exc)
        else:
            outcome.append(None)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(10)
    return outcome


def test_another_writer_gets_in_between_chunks(
    world: World, runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    web, run_id, _ = _two_runs(world, runtime)
    user = web.user_id
    assert user is not None
    written: list[list[BaseException | None]] = []

    def write_elsewhere() -> None:
        def grant() -> None:
            with transaction(runtime, OPERATOR) as ctx:
                credits.grant_credits(ctx, user, 5)

        # While the apply is under way, between its chunks: a writer waiting for the whole
        # apply to end would still be waiting when the join gives up.
        written.append(_in_thread(grant))

    fired = _on_answer(monkeypatch, 2 * CHUNK + 3, write_elsewhere)
    applied = world.do(web, rescoring.rescore_run, run_id, F1, True, CHUNK)
    assert fired and written == [[None]], "the other writer did not get in during the apply"
    assert applied.applied and applied.changed_count > 0


def test_a_later_apply_takes_over(
    world: World, runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    web, run_id, _ = _two_runs(world, runtime)
    exact = {"method": "exact"}
    outcome: list[list[BaseException | None]] = []

    def apply_exact() -> None:
        work = lambda: world.do(web, rescoring.rescore_run, run_id, exact, True, CHUNK)  # noqa: E731
        outcome.append(_in_thread(work))

    world.do(web, rescoring.rescore_run, run_id, F1, True, CHUNK)  # stored verdicts: F1's
    _on_answer(monkeypatch, CHUNK + 3, apply_exact)
    with pytest.raises(Conflict, match="meanwhile"):
        world.do(web, rescoring.rescore_run, run_id, F1, True, CHUNK)
    assert outcome == [[None]]
    scoring, summary, _ = _stored(world, run_id)[1]
    assert scoring["method"] == "exact"
    check = world.do(web, rescoring.rescore_run, run_id, None, False, CHUNK)
    assert check.changed_count == 0 and check.after == summary, "the run holds exact's verdicts"
