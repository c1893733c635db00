"""The async run engine: asks a model every question with bounded, adaptive concurrency."""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from benchgen.evals.redact import redact
from benchgen.evals.types import (
    Adapter,
    Answer,
    Completion,
    FatalModelError,
    Item,
    RateLimitedError,
    RetryableError,
)

# How often the engine flushes by time, polls `is_cancelled` and reports progress (at most).
_TICK_S = 0.25


@dataclass
class EngineReport:
    """What a call to `run_items` did. Every attempted question is in `done` or `errors`."""

    done: int = 0  # questions answered by the model
    errors: int = 0  # questions that ended with a recorded error
    cancelled: bool = False
    input_tokens: int = 0
    output_tokens: int = 0
    elapsed_s: float = 0.0
    retries: int = 0  # attempts beyond each question's first
    lowest_concurrency: int = 0  # the smallest in-flight limit rate limiting pushed it down to


class _Gate:
    """AIMD limit on requests in flight: halve on a 429, add one back per `limit` successes.

    Growing by one per window of replies (as TCP does per round trip) recovers quickly from a
    deep cut and slowly near the top, where the endpoint pushed back before.
    """

    def __init__(self, maximum: int) -> None:
        self.maximum = self.limit = self.lowest = maximum
        self._active = 0
        self._successes = 0
        self._last_cut = -1.0
        self._waiters: deque[asyncio.Future[None]] = deque()

    async def acquire(self) -> None:
        while self._active >= self.limit:
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            except asyncio.CancelledError:
                self._wake()  # pass on a wake-up this waiter may have taken
                raise
        self._active += 1

    def release(self, ok: bool) -> None:
        self._active -= 1
        if ok and self.limit < self.maximum:
            self._successes += 1
            if self._successes >= self.limit:
                self.limit += 1
                self._successes = 0
        self._wake()

    def rate_limited(self, sent_at: float) -> None:
        # Requests sent before the last cut saw the old limit: one burst of 429s is one cut.
        if sent_at > self._last_cut:
            self.limit = max(1, self.limit // 2)
            self.lowest = min(self.lowest, self.limit)
            self._successes = 0
            self._last_cut = time.perf_counter()

    def _wake(self) -> None:
        free = self.limit - self._active
        while free > 0 and self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                free -= 1


@dataclass
class _Settings:
    max_attempts: int
    request_timeout_s: float
    backoff_s: float
    max_backoff_s: float
    secrets: tuple[str, ...]


@dataclass
class _Run:
    """State of one `run_items` call; all of it lives on the event loop's thread."""

    adapter: Adapter
    settings: _Settings
    gate: _Gate
    queue: deque[tuple[Item, str]]
    on_batch: Callable[[list[Answer]], None]
    batch_size: int
    report: EngineReport = field(default_factory=EngineReport)
    pending: list[Answer] = field(default_factory=list)
    stop: asyncio.Event = field(default_factory=asyncio.Event)

    async def work(self) -> None:
        while self.queue and not self.stop.is_set():
            item, prompt = self.queue.popleft()
            self.record(await self.answer(item, prompt))

    def record(self, answer: Answer) -> None:
        if answer.error is None:
            self.report.done += 1
            self.report.input_tokens += answer.input_tokens
            self.report.output_tokens += answer.output_tokens
        else:
            self.report.errors += 1
        self.report.retries += answer.attempts - 1
        self.pending.append(answer)
        if len(self.pending) >= self.batch_size:
            self.flush()

    def flush(self) -> None:
        if self.pending:
            batch, self.pending = self.pending, []
            self.on_batch(batch)

    async def answer(self, item: Item, prompt: str) -> Answer:
        """Ask until a reply, a fatal error, the last attempt, or a cancelled run."""
        attempt = 0
        while True:
            attempt += 1
            outcome, started = await self.attempt(item, prompt)
            if isinstance(outcome, Completion):
                return _answered(item, prompt, outcome, attempt, started)
            cancelled = False
            if isinstance(outcome, RetryableError) and attempt < self.settings.max_attempts:
                if not self.stop.is_set():
                    await self.pause(self.backoff(attempt, outcome.retry_after_s))
                if not self.stop.is_set():
                    continue
                cancelled = True
            error = _describe(outcome, attempt, cancelled)
            return self.failed(item, prompt, error, attempt, started)

    async def attempt(self, item: Item, prompt: str) -> tuple[Completion | Exception, float]:
        """One try within a gate slot: the reply, or the failure as a value, and when it began."""
        await self.gate.acquire()
        started = time.perf_counter()
        outcome: Completion | Exception
        try:
            async with asyncio.timeout(self.settings.request_timeout_s):
                outcome = await self.adapter.complete(item, prompt)
        except TimeoutError:
            outcome = RetryableError(f"no reply within {self.settings.request_timeout_s:g} s")
        except Exception as exc:  # an adapter bug on one reply must not sink the whole run
            outcome = exc
        except BaseException:  # cancelled: hand the slot back and stop
            self.gate.release(ok=False)
            raise
        if isinstance(outcome, RateLimitedError):
            self.gate.rate_limited(started)
        self.gate.release(ok=isinstance(outcome, Completion))
        return outcome, started

    async def pause(self, delay_s: float) -> None:
        """Sleep before a retry, waking early if the run is cancelled."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(delay_s):
                await self.stop.wait()

    def backoff(self, attempt: int, retry_after_s: float | None) -> float:
        if retry_after_s is not None:
            base = retry_after_s
        else:
            base = self.settings.backoff_s * 2 ** (attempt - 1)
        # Jitter spreads retries so that workers cut off together do not come back together.
        jittered = base * (1 + random.random() / 2)  # noqa: S311 - timing jitter, not a secret
        return min(jittered, self.settings.max_backoff_s)

    def failed(self, item: Item, prompt: str, error: str, attempts: int, started: float) -> Answer:
        return Answer(
            index=item.index,
            prompt_sent=prompt,
            raw=None,
            error=redact(error, self.settings.secrets),
            input_tokens=0,
            output_tokens=0,
            latency_ms=_ms_since(started),
            attempts=attempts,
            sample=item.sample,
        )


def _describe(failure: Exception, attempts: int, cancelled: bool) -> str:
    if isinstance(failure, RetryableError):
        why = "stopped by cancellation" if cancelled else "gave up"
        return f"{why} after {attempts} attempt{'s' if attempts > 1 else ''}: {failure}"
    if isinstance(failure, FatalModelError) and str(failure):
        return str(failure)
    return f"{type(failure).__name__}: {failure}"  # a bug: name its type


def _answered(
    item: Item, prompt: str, completion: Completion, attempts: int, started: float
) -> Answer:
    return Answer(
        index=item.index,
        prompt_sent=prompt,
        raw=completion.text,
        error=None,
        input_tokens=completion.input_tokens,
        output_tokens=completion.output_tokens,
        # The last attempt only: the model's own latency, not time spent backing off.
        latency_ms=_ms_since(started),
        attempts=attempts,
        letter_logprobs=completion.letter_logprobs,
        sample=item.sample,
    )


def _ms_since(started: float) -> int:
    return round((time.perf_counter() - started) * 1000)


async def run_items(
    adapter: Adapter,
    work: list[tuple[Item, str]],
    *,
    concurrency: int = 16,
    max_attempts: int = 4,
    request_timeout_s: float = 60,
    on_batch: Callable[[list[Answer]], None],
    batch_size: int = 100,
    flush_interval_s: float = 0.5,
    is_cancelled: Callable[[], bool] = lambda: False,
    on_progress: Callable[[int, int], None] | None = None,
    secrets: tuple[str, ...] = (),
    backoff_s: float = 0.5,
    max_backoff_s: float = 30.0,
) -> EngineReport:
    """Ask `adapter` every (item, prompt) in `work` and hand each question's Answer to `on_batch`.

    A fixed pool of `concurrency` workers pulls from one queue; an AIMD gate lowers the number
    in flight when the endpoint answers 429 and raises it again as requests succeed. Each
    question ends in exactly one Answer, a reply or an error, unless cancellation came before it
    was attempted (then it gets none). Callbacks run on the event loop's thread, one at a time.

    Args:
        adapter: the model to ask; the caller closes it.
        work: questions with the exact prompt to send for each.
        concurrency: the most requests in flight (the pool size), fewer where the adapter's
            `max_in_flight` is lower.
        max_attempts: tries per question on retryable errors (429, 5xx, timeouts).
        request_timeout_s: how long one attempt may take before it counts as a timeout.
        on_batch: receives answers in order of completion, in batches of up to `batch_size`,
            at least every `flush_interval_s` while answers wait, and once at the end.
        batch_size: answers per `on_batch` call at most.
        flush_interval_s: the longest an answer waits before being handed over (roughly).
        is_cancelled: polled a few times a second; once True, no new question is started,
            requests in flight finish, and questions waiting to retry end with their last error.
        on_progress: called with (finished, total) at most four times a second and at the end.
        secrets: strings (API keys) replaced by "[redacted]" in every error message.
        backoff_s: the first retry's delay; it doubles per attempt, with jitter.
        max_backoff_s: the longest delay between attempts, Retry-After included.

    Returns:
        Counts, tokens and timing; `cancelled` says whether `is_cancelled` fired.

    Raises:
        ValueError: `concurrency`, `max_attempts` or `batch_size` below 1.
        Exception: whatever `on_batch`, `on_progress` or `is_cancelled` raised; the workers are
            stopped first.
    """
    if min(concurrency, max_attempts, batch_size) < 1:
        raise ValueError("concurrency, max_attempts and batch_size must be at least 1")
    started = time.perf_counter()
    concurrency = _in_flight(adapter, concurrency)
    run = _Run(
        adapter=adapter,
        settings=_Settings(max_attempts, request_timeout_s, backoff_s, max_backoff_s, secrets),
        gate=_Gate(concurrency),
        queue=deque(work),
        on_batch=on_batch,
        batch_size=batch_size,
    )
    if is_cancelled():
        run.stop.set()
        run.report.cancelled = True
    tasks = [asyncio.create_task(run.work()) for _ in range(min(concurrency, len(work)))]
    try:
        await _supervise(run, tasks, flush_interval_s, is_cancelled, on_progress, len(work))
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
    run.flush()
    run.report.lowest_concurrency = run.gate.lowest
    run.report.elapsed_s = time.perf_counter() - started
    if on_progress is not None:
        on_progress(run.report.done + run.report.errors, len(work))
    return run.report


def _in_flight(adapter: Adapter, concurrency: int) -> int:
    """The questions to keep in hand: no more than the adapter really runs at once, since one
    waiting inside it (a local model's turn) would still be asked, and charged, after a cancel."""
    limit = adapter.max_in_flight
    return concurrency if limit is None else min(concurrency, limit)


async def _supervise(
    run: _Run,
    tasks: list[asyncio.Task[None]],
    flush_interval_s: float,
    is_cancelled: Callable[[], bool],
    on_progress: Callable[[int, int], None] | None,
    total: int,
) -> None:
    """Tick while the workers run: flush by time, poll for cancellation, report progress."""
    last_flush = last_progress = time.perf_counter()
    reported = -1
    workers = asyncio.gather(*tasks)
    while not workers.done():
        await asyncio.wait([workers], timeout=min(_TICK_S, flush_interval_s))
        # Polled here rather than per question: the probe may read a database.
        if not run.stop.is_set() and is_cancelled():
            run.stop.set()
            run.report.cancelled = True
        now = time.perf_counter()
        if now - last_flush >= flush_interval_s:
            run.flush()
            last_flush = now
        finished = run.report.done + run.report.errors
        if on_progress is not None and finished != reported and now - last_progress >= _TICK_S:
            on_progress(finished, total)
            reported, last_progress = finished, now
    workers.result()  # re-raise what a worker's size-triggered flush raised
