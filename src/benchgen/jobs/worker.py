"""The worker loop: claim a job with a lease, keep it alive with heartbeats, retry or give up."""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
from datetime import timedelta

from benchgen.core.errors import Unavailable
from benchgen.core.ids import new_id
from benchgen.core.statuses import JobStatus
from benchgen.jobs.handlers import HANDLERS, WORKER
from benchgen.services import queue
from benchgen.services.queue import Claimed
from benchgen.services.runtime import Runtime, transaction

log = logging.getLogger(__name__)


class Worker:
    """One worker thread's loop; `benchgen serve` runs a few, `benchgen worker` runs them alone."""

    def __init__(
        self,
        runtime: Runtime,
        poll_s: float = 0.25,
        lease: timedelta | None = None,
        kinds: frozenset[str] | None = None,
    ) -> None:
        self.runtime = runtime
        self.poll_s = poll_s
        self.kinds = kinds  # the job kinds of this worker's queues (None: every kind)
        self.lease = lease or timedelta(seconds=runtime.settings.job_lease_s)
        self.name = f"{socket.gethostname()}:{os.getpid()}:{new_id('w')}"
        self.stopping = threading.Event()

    def run_forever(self) -> None:
        """Work until `stop()`; waits up to `poll_s` whenever the queue is empty or the database
        is too busy to claim (a busy database must not end the worker's thread)."""
        while not self.stopping.is_set():
            try:
                worked = self.run_once()
            except Unavailable as exc:
                log.warning("worker %s: database busy, trying again (%s)", self.name, exc.message)
                worked = False
            if not worked and not self.stopping.is_set():
                queue.wait_for_work(self.poll_s)  # a job queued in this process ends it early

    def stop(self) -> None:
        """Finish the current job, then return from `run_forever`."""
        self.stopping.set()
        queue.wake_workers()

    def run_once(self, job_id: str | None = None) -> bool:
        """Claim and handle at most one job (only `job_id` when given, as a broker's message
        names it); False when none was due or it was not this worker's to take."""
        with transaction(self.runtime, WORKER) as ctx:
            job = queue.claim(ctx, self.name, self.lease, self.kinds, job_id)
        if job is None:
            return False
        handler = HANDLERS[job.kind]
        if job.exhausted:
            self._give_up(job, "gave up: the worker holding it stopped answering")
            return True
        beating = _Heartbeat(self, job)
        try:
            with beating:
                handler.run(self.runtime, job)
            if job.lease_lost.is_set():
                return True  # taken over while this worker stalled: nothing of it is ours
        except queue.Postponed as wait:
            # Not a failure: the job waits for what it needs (e.g. busy compute) and keeps its
            # attempts.
            with transaction(self.runtime, WORKER) as ctx:
                queue.postpone(ctx, job.id, self.name, wait.seconds)
            return True
        except Exception as exc:
            log.warning("job %s attempt %s failed: %s", job.id, job.attempt, type(exc).__name__)
            self._after_failure(job, f"{type(exc).__name__}: {exc}")
            return True
        self._finish(job, JobStatus.DONE)
        return True

    def _after_failure(self, job: Claimed, error: str) -> None:
        with transaction(self.runtime, WORKER) as ctx:
            if not queue.holds(ctx, job.id, self.name):
                # Another worker took the job over while this one stalled, and this attempt's
                # failure may be no more than that (its answers were already recorded there):
                # failing or refunding the run now would undo the other worker's work.
                log.warning("job %s: lease lost to another worker; leaving it", job.id)
                return
            again = queue.retry_later(ctx, job.id, self.name, error)
        if not again:
            self._give_up(job, error)

    def _give_up(self, job: Claimed, error: str) -> None:
        HANDLERS[job.kind].give_up(self.runtime, job, error)
        self._finish(job, JobStatus.FAILED, error)

    def _finish(self, job: Claimed, status: JobStatus, error: str = "") -> None:
        with transaction(self.runtime, WORKER) as ctx:
            queue.finish(ctx, job.id, self.name, status, error)


class _Heartbeat:
    """Extends the job's lease every third of it while the handler works."""

    def __init__(self, worker: Worker, job: Claimed) -> None:
        self.worker, self.job = worker, job
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._beat, daemon=True)

    def __enter__(self) -> None:
        self.thread.start()

    def __exit__(self, *_: object) -> None:
        self.done.set()
        self.thread.join()

    def _beat(self) -> None:
        interval = self.worker.lease.total_seconds() / 3
        while not self.done.wait(interval):
            # A busy database skips one beat; the lease outlasts three of them.
            with contextlib.suppress(Unavailable), transaction(self.worker.runtime, WORKER) as ctx:
                if not queue.heartbeat(ctx, self.job.id, self.worker.name, self.worker.lease):
                    self.job.lease_lost.set()  # the handler's stop probe sees it
                    return


def start_workers(
    runtime: Runtime, count: int, kinds: frozenset[str] | None = None
) -> list[tuple[Worker, threading.Thread]]:
    """Start `count` worker threads (the embedded pool of `benchgen serve`, or `benchgen
    worker` without a broker) taking jobs of `kinds` (None: every kind)."""
    started = []
    for index in range(count):
        worker = Worker(runtime, kinds=kinds)
        thread = threading.Thread(target=worker.run_forever, name=f"worker-{index}", daemon=True)
        thread.start()
        started.append((worker, thread))
    return started


def stop_workers(started: list[tuple[Worker, threading.Thread]], timeout_s: float = 10) -> None:
    """Ask every worker to stop and wait for them."""
    for worker, _ in started:
        worker.stop()
    for _, thread in started:
        thread.join(timeout_s)
