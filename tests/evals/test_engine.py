"""The run engine against the stub endpoint: faults, adaptive concurrency, cancellation, batches."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import anyio
import pytest

from benchgen.evals.adapters import build_adapter
from benchgen.evals.engine import EngineReport, run_items
from benchgen.evals.types import (
    Answer,
    Completion,
    FatalModelError,
    Item,
    ModelSpec,
    RetryableError,
)
from tests.evals.stub_openai import Fault, StubOpenAI, stub_letter

pytestmark = pytest.mark.anyio

KEY = "sk-test-0123456789abcdefSECRET"
FAST = {"backoff_s": 0.01, "max_backoff_s": 0.05}


def make_work(n: int) -> list[tuple[Item, str]]:
    """n distinct four-choice questions, each with its prompt."""
    work = []
    for i in range(n):
        choices = (f"red {i}", f"green {i}", f"blue {i}", f"grey {i}")
        item = Item(index=i, prompt=f"Question {i}?", choices=choices)
        lines = "\n".join(f"{label}. {text}" for label, text in zip("ABCD", choices, strict=True))
        work.append((item, f"Question {i}?\n\n{lines}\n\nEnd with ANSWER: X"))
    return work


def openai_spec(stub: StubOpenAI, **params: Any) -> ModelSpec:
    params = {"concurrency": 64, **params}
    # The stub listens on loopback, which the adapters refuse unless the operator opens it.
    return ModelSpec("openai_compat", "stub", stub.base_url, KEY, params, frozenset({"127.0.0.1"}))


async def run_against(
    stub: StubOpenAI, work: list[tuple[Item, str]], **options: Any
) -> tuple[EngineReport, list[list[Answer]]]:
    """Run `work` through the OpenAI-compatible adapter; return the report and the batches."""
    batches: list[list[Answer]] = []
    adapter = build_adapter(openai_spec(stub))
    try:
        report = await run_items(adapter, work, on_batch=batches.append, **{**FAST, **options})
    finally:
        await adapter.aclose()
    return report, batches


def flat(batches: list[list[Answer]]) -> list[Answer]:
    return [answer for batch in batches for answer in batch]


def assert_one_answer_each(answers: list[Answer], indices: set[int]) -> None:
    counts = Counter(answer.index for answer in answers)
    assert set(counts) == indices
    assert max(counts.values()) == 1
    assert all((answer.raw is None) != (answer.error is None) for answer in answers)


async def test_every_question_is_answered_once_with_the_stub_letter() -> None:
    work = make_work(200)
    with StubOpenAI(latency_s=0.01) as stub:
        report, batches = await run_against(stub, work, concurrency=16, batch_size=64)
    answers = flat(batches)
    assert_one_answer_each(answers, set(range(200)))
    prompts = {item.index: prompt for item, prompt in work}
    assert all(
        a.raw and a.raw.endswith(f"ANSWER: {stub_letter(prompts[a.index])}") for a in answers
    )
    assert all(a.prompt_sent == prompts[a.index] and a.attempts == 1 for a in answers)
    assert max(stub.answered.values()) == 1 and len(stub.answered) == 200
    assert (report.done, report.errors, report.cancelled, report.retries) == (200, 0, False, 0)
    assert report.input_tokens == sum(a.input_tokens for a in answers) > 0
    assert report.output_tokens == sum(a.output_tokens for a in answers) > 0
    assert all(len(batch) <= 64 for batch in batches)


async def test_429s_500s_timeouts_and_slow_answers_each_end_in_one_answer() -> None:
    faults = {
        1: Fault.rate_limited("0"),
        5: Fault.server_error(),
        9: Fault.slow(5.0),  # hangs past the client's timeout
        13: Fault.slow(0.1),
    }

    def fail(n: int, prompt: str) -> Fault | None:
        return faults.get(n % 20)

    with StubOpenAI(latency_s=0.005, fail=fail) as stub:
        report, batches = await run_against(
            stub, make_work(300), concurrency=16, request_timeout_s=0.4, max_attempts=6
        )
    answers = flat(batches)
    assert_one_answer_each(answers, set(range(300)))
    assert report.done + report.errors == 300
    assert report.retries == sum(a.attempts - 1 for a in answers) > 0
    assert max(stub.answered.values()) == 1


async def test_a_question_that_always_fails_records_the_last_error() -> None:
    work = make_work(20)
    doomed = work[7][1]
    with StubOpenAI(
        fail=lambda n, prompt: Fault.server_error() if prompt == doomed else None
    ) as stub:
        report, batches = await run_against(stub, work, max_attempts=3)
    failed = [a for a in flat(batches) if a.error]
    assert [(a.index, a.attempts) for a in failed] == [(7, 3)]
    assert failed[0].error is not None and failed[0].error.startswith("gave up after 3 attempts")
    assert stub.received[doomed] == 3
    assert (report.done, report.errors) == (19, 1)


async def test_timeouts_are_retried() -> None:
    seen: Counter[str] = Counter()

    def hang_first(n: int, prompt: str) -> Fault | None:
        seen[prompt] += 1
        return Fault.slow(5.0) if seen[prompt] == 1 else None

    with StubOpenAI(fail=hang_first) as stub:
        report, batches = await run_against(stub, make_work(10), request_timeout_s=0.2)
    assert {a.attempts for a in flat(batches)} == {2}
    assert (report.done, report.errors) == (10, 0)


async def test_rate_limits_halve_concurrency_then_it_grows_back() -> None:
    def fail(n: int, prompt: str) -> Fault | None:
        return Fault.rate_limited("0") if n <= 16 else None

    # 50 ms per reply keeps this CPU-light, so what the stub sees is the gate, not a busy client.
    with StubOpenAI(latency_s=0.05, fail=fail) as stub:
        report, batches = await run_against(stub, make_work(400), concurrency=16)
    assert report.lowest_concurrency == 8  # one burst of 429s is one cut, not sixteen
    assert max(stub.in_flight_seen[16:32]) < 10
    assert max(stub.in_flight_seen[-100:]) >= 12  # grown back towards 16
    assert_one_answer_each(flat(batches), set(range(400)))


async def test_fatal_errors_are_not_retried() -> None:
    with StubOpenAI(fail=lambda n, prompt: Fault(400, body='{"error": "bad"}')) as stub:
        report, batches = await run_against(stub, make_work(5))
    assert {(a.attempts, a.raw) for a in flat(batches)} == {(1, None)}
    assert sum(stub.received.values()) == 5
    assert report.errors == 5


async def test_cancellation_stops_new_work_and_skips_unattempted_questions() -> None:
    work = make_work(500)
    batches: list[list[Answer]] = []
    with StubOpenAI(latency_s=0.02) as stub:
        adapter = build_adapter(openai_spec(stub))
        report = await run_items(
            adapter,
            work,
            concurrency=8,
            batch_size=10,
            on_batch=batches.append,
            is_cancelled=lambda: len(batches) >= 4,
        )
        await adapter.aclose()
    answers = flat(batches)
    assert report.cancelled
    assert 40 <= len(answers) < 500
    assert_one_answer_each(answers, {a.index for a in answers})
    assert set(stub.received) == {a.prompt_sent for a in answers}
    assert report.done + report.errors == len(answers)


async def test_cancelled_before_start_asks_nothing() -> None:
    with StubOpenAI() as stub:
        report, batches = await run_against(stub, make_work(5), is_cancelled=lambda: True)
    assert report.cancelled and batches == [] and not stub.received


class Instant:
    """An adapter that answers at once, or raises what `raises` says for an index."""

    max_in_flight = None

    def __init__(self, raises: dict[int, Exception] | None = None) -> None:
        self.raises = raises or {}

    async def complete(self, item: Item, prompt: str) -> Completion:
        if item.index in self.raises:
            raise self.raises[item.index]
        return Completion(f"ANSWER: A ({prompt})", 3, 2)

    async def aclose(self) -> None:
        pass


async def test_batches_are_cut_by_size_with_a_final_flush() -> None:
    batches: list[list[Answer]] = []
    report = await run_items(Instant(), make_work(250), batch_size=100, on_batch=batches.append)
    assert [len(batch) for batch in batches] == [100, 100, 50]
    assert (report.input_tokens, report.output_tokens) == (750, 500)


async def test_batches_are_flushed_by_time_while_answers_trickle_in() -> None:
    with StubOpenAI(latency_s=0.05) as stub:
        report, batches = await run_against(
            stub, make_work(40), concurrency=2, batch_size=1000, flush_interval_s=0.1
        )
    assert len(batches) >= 5
    assert sum(map(len, batches)) == 40 == report.done


async def test_progress_is_throttled_and_ends_complete() -> None:
    calls: list[tuple[int, int]] = []
    with StubOpenAI(latency_s=0.02) as stub:
        report, _ = await run_against(
            stub, make_work(200), concurrency=4, on_progress=lambda *a: calls.append(a)
        )
    assert calls[-1] == (200, 200)
    assert [done for done, _ in calls] == sorted(done for done, _ in calls)
    assert len(calls) <= report.elapsed_s * 4 + 2


async def test_the_key_never_reaches_an_error() -> None:
    echo = '{"error": "bad key {auth}"}'
    faults = {1: Fault(401, body=echo), 2: Fault(500, body=echo), 3: Fault(429, body=echo)}
    with StubOpenAI(fail=lambda n, prompt: faults.get(n % 4)) as stub:
        _, batches = await run_against(stub, make_work(40), max_attempts=2)
    errors = [a.error for a in flat(batches) if a.error]
    assert errors and all(KEY not in error and "[redacted]" in error for error in errors)


async def test_engine_redacts_secrets_an_adapter_let_through() -> None:
    secret = "plain-secret-without-shape"
    adapter = Instant({0: RetryableError(f"echo {secret}"), 1: FatalModelError(f"key {secret}")})
    batches: list[list[Answer]] = []
    await run_items(
        adapter,
        make_work(2),
        on_batch=batches.append,
        secrets=(secret,),
        max_attempts=2,
        backoff_s=0.01,
    )
    errors = sorted(a.error or "" for a in flat(batches))
    assert errors == ["gave up after 2 attempts: echo [redacted]", "key [redacted]"]


async def test_an_adapter_bug_is_one_question_error_not_a_crash() -> None:
    batches: list[list[Answer]] = []
    report = await run_items(
        Instant({3: KeyError("choices")}), make_work(6), on_batch=batches.append
    )
    failed = [a for a in flat(batches) if a.error]
    assert [(a.index, a.error, a.attempts) for a in failed] == [(3, "KeyError: 'choices'", 1)]
    assert (report.done, report.errors) == (5, 1)


async def test_a_failing_writer_stops_the_run_and_propagates() -> None:
    def on_batch(answers: list[Answer]) -> None:
        raise OSError("disk full")

    with StubOpenAI(latency_s=0.01) as stub:
        adapter = build_adapter(openai_spec(stub))
        with pytest.raises(OSError, match="disk full"):
            await run_items(adapter, make_work(100), batch_size=5, on_batch=on_batch)
        await adapter.aclose()
        sent = sum(stub.received.values())
    assert sent < 100


async def test_no_work_is_a_finished_run() -> None:
    calls: list[tuple[int, int]] = []
    report = await run_items(
        Instant(), [], on_batch=lambda a: None, on_progress=lambda *a: calls.append(a)
    )
    assert (report.done, report.errors, report.cancelled, calls) == (0, 0, False, [(0, 0)])


class AlwaysBusy:
    """An adapter whose endpoint always asks to come back in ten seconds."""

    max_in_flight = None

    async def complete(self, item: Item, prompt: str) -> Completion:
        raise RetryableError(f"busy {item.index}", retry_after_s=10)

    async def aclose(self) -> None:
        pass


async def test_cancellation_wakes_questions_waiting_to_retry() -> None:
    batches: list[list[Answer]] = []
    clock = {"polls": 0}

    def cancelled_on_second_poll() -> bool:
        clock["polls"] += 1
        return clock["polls"] > 2

    with anyio.fail_after(5):  # the retry delay is 10 s: only cancellation can end this early
        report = await run_items(
            AlwaysBusy(),
            make_work(3),
            on_batch=batches.append,
            is_cancelled=cancelled_on_second_poll,
        )
    answers = flat(batches)
    assert report.cancelled and report.errors == 3
    assert {a.error for a in answers} == {
        f"stopped by cancellation after 1 attempt: busy {a.index}" for a in answers
    }


class TakesTurns:
    """A local model's shape: one call at a time on its own lock, `reply_s` each."""

    max_in_flight = 1

    def __init__(self, reply_s: float) -> None:
        self.reply_s = reply_s
        self.asked: list[int] = []  # the questions that reached the model
        self.most_waiting = 0  # the most calls ever queued on the lock at once
        self._waiting = 0
        self._turn = asyncio.Lock()

    async def complete(self, item: Item, prompt: str) -> Completion:
        self._waiting += 1
        self.most_waiting = max(self.most_waiting, self._waiting)
        async with self._turn:
            self._waiting -= 1
            self.asked.append(item.index)
            await asyncio.sleep(self.reply_s)
        return Completion("ANSWER: A", 3, 2)

    async def aclose(self) -> None:
        pass


async def test_a_one_at_a_time_adapter_gets_one_question_at_a_time() -> None:
    adapter = TakesTurns(reply_s=0)
    report = await run_items(adapter, make_work(30), concurrency=16, on_batch=lambda a: None)
    assert report.done == 30 and report.lowest_concurrency == 1
    assert adapter.most_waiting == 1


async def test_cancelling_a_one_at_a_time_model_asks_no_question_queued_behind_it() -> None:
    adapter = TakesTurns(reply_s=0.05)
    batches: list[list[Answer]] = []
    report = await run_items(
        adapter,
        make_work(40),
        concurrency=16,
        batch_size=1,
        flush_interval_s=0.01,  # the engine polls for cancellation at this pace too
        on_batch=batches.append,
        is_cancelled=lambda: bool(batches),
    )
    answers = flat(batches)
    assert report.cancelled and report.errors == 0
    # The first answer, and at most the question asked before the next poll saw the cancel:
    # never the queue's worth a pool of 16 would have waiting on the model's lock.
    assert 1 <= report.done <= 2
    assert sorted(adapter.asked) == sorted(a.index for a in answers)
    assert report.elapsed_s < 0.5


@pytest.mark.parametrize("option", ["concurrency", "max_attempts", "batch_size"])
async def test_nonsense_limits_are_refused(option: str) -> None:
    with pytest.raises(ValueError, match="at least 1"):
        await run_items(Instant(), make_work(1), on_batch=lambda a: None, **{option: 0})


async def test_64_requests_in_flight_at_once() -> None:
    with StubOpenAI(latency_s=0.1) as stub:
        report, batches = await run_against(stub, make_work(256), concurrency=64)
    assert max(stub.in_flight_seen) >= 48  # the stub and the adapter's pool both keep up
    assert_one_answer_each(flat(batches), set(range(256)))
    assert report.done == 256
