"""The worker loop: claim a job with a lease, keep it alive with heartbeats, retry or give up."""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING

from benchgen.core.context import Context, Principal
from benchgen.core.errors import Unavailable
from benchgen.core.ids import new_id
from benchgen.core.permissions import Action
from benchgen.core.statuses import JobStatus
from benchgen.jobs.handlers import HANDLERS, WORKER
from benchgen.jobs.webhooks import WebhookRounds, start_webhook_rounds
from benchgen.services import queue
from benchgen.services.queue import Claimed
from benchgen.services.runtime import Runtime, failure_text, transaction

if TYPE_CHECKING:
    from benchgen.services.benchmarks.outbox_delivery import ClaimedLetter, Delivered, Outcome

log = logging.getLogger(__name__)
# The longest pause between rounds while the database stays away: a restart of PostgreSQL takes
# seconds, and a worker should be back soon after it without hammering it meanwhile.
MAX_BACKOFF_S = 5.0
# How often a process's mail thread looks for waiting mail: an owner's message to participants
# goes out within this, and the look is one indexed query.
MAIL_ROUND_S = 10.0
MAILER = Principal.system("mail", frozenset({Action.MAIL_SEND}))


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
        self.job: Claimed | None = None  # the job its handler is working on
        self.claimed: str | None = None  # the id of the job the last `run_once` claimed

    def run_forever(self) -> None:
        """Work until `stop()`; waits up to `poll_s` whenever the queue is empty. A busy or
        unreachable database, or any other error of one round, is logged and waited out with a
        growing pause (up to `MAX_BACKOFF_S`): nothing ends the worker's thread but `stop()`,
        since a thread that ended alone left its process up and its jobs waiting for ever."""
        failures = 0  # failed rounds in a row
        while not self.stopping.is_set():
            worked = False
            try:
                worked = self.run_once()
                failures = 0
            except Unavailable as exc:
                failures += 1
                cause = exc.__cause__ or exc
                log.warning("worker %s: database unavailable, trying again (%s)", self.name, cause)
            except Exception:
                failures += 1
                log.exception("worker %s: unexpected error; trying again", self.name)
            if failures:
                self.stopping.wait(self._backoff(failures))
            elif not worked and not self.stopping.is_set():
                queue.wait_for_work(self.poll_s)  # a job queued in this process ends it early

    def _backoff(self, failures: int) -> float:
        """Seconds to wait after `failures` failed rounds in a row: `poll_s`, doubling."""
        # The exponent is capped: a float overflow after hours of outage would end the thread.
        return min(self.poll_s * 2.0 ** min(failures - 1, 16), MAX_BACKOFF_S)

    def stop(self) -> None:
        """Finish the current job, then return from `run_forever`."""
        self.stopping.set()
        queue.wake_workers()

    def hand_back(self) -> None:
        """Put the job being worked on back in the queue now, its attempt not counted, and
        stop its handler without recording more: for a process ending before the job does.
        Left held, the job waited for its lease to run out, and that attempt counted."""
        job = self.job
        if job is None:
            return
        job.lease_lost.set()  # the handler's stop probe: from now on nothing of it is ours
        try:
            with transaction(self.runtime, WORKER) as ctx:
                queue.postpone(ctx, job.id, self.name, 0)
        except Exception as exc:  # the process is ending: its lease hands the job on instead
            log.warning("job %s: not handed back (%s)", job.id, type(exc).__name__)

    def run_once(self, job_id: str | None = None) -> bool:
        """Claim and handle at most one job (`job_id`: the one a broker's message names, which
        takes its turn unless a less busy user's job waits: `queue.claim`); False when none
        was due or it was not this worker's to take."""
        with transaction(self.runtime, WORKER) as ctx:
            job = queue.claim(ctx, self.name, self.lease, self.kinds, job_id)
        self.claimed = job.id if job is not None else None
        if job is None:
            return False
        handler = HANDLERS[job.kind]
        _log_takeover(job)
        if job.exhausted:
            self._give_up(job, "gave up: the worker holding it stopped answering")
            return True
        beating = _Heartbeat(self, job)
        self.job = job
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
            self._after_failure(job, failure_text(exc))
            return True
        finally:
            self.job = None
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


def _log_takeover(job: Claimed) -> None:
    """Say that the job's last worker died holding it, and what becomes of it: taken over
    silently, a crash was seen only as a run that took longer."""
    if not job.taken_over_from:
        return
    if job.exhausted:
        then = "its attempts ran out: giving it up"
    else:
        then = f"taking it over (attempt {job.attempt})"
    log.warning(
        "job %s: worker %s stopped answering (its lease ran out); %s",
        job.id,
        job.taken_over_from,
        then,
    )


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
            if not self._extend():
                self.job.lease_lost.set()  # the handler's stop probe sees it
                return

    def _extend(self) -> bool:
        """One beat; False only when the job is definitely no longer this worker's.

        A failed beat (a busy or unreachable database, any other error) is logged and skipped,
        never the end of the thread: the lease outlasts three beats, and a thread that ended
        silently let the lease run out while the handler went on, so a second worker ran the
        same job beside this one.
        """
        worker = self.worker
        try:
            with transaction(worker.runtime, WORKER) as ctx:
                return queue.heartbeat(ctx, self.job.id, worker.name, worker.lease)
        except Unavailable as exc:
            cause = exc.__cause__ or exc
            log.warning("job %s: heartbeat skipped, database unavailable (%s)", self.job.id, cause)
        except Exception:
            log.exception("job %s: heartbeat failed; trying again at the next beat", self.job.id)
        return True


class Mailer:
    """One thread's loop sending the outbox's waiting mail (owners' mail to participants, and
    retries of any mail that failed) when SMTP is configured.

    A round every MAIL_ROUND_S rather than a job per message: owners' mail is recorded by the
    benchmark services, which sit below the job queue and do not enqueue, and account mail that
    failed has no job to retry it. Its own thread, so a worker busy for hours with a run holds
    no mail back. Every process with workers runs one (a broker's workers too); the rounds
    claim each message before sending it, so two processes never send the same one.
    """

    def __init__(self, runtime: Runtime, every_s: float = MAIL_ROUND_S) -> None:
        self.runtime, self.every_s = runtime, every_s
        self.stopping = threading.Event()

    def run_forever(self) -> None:
        """Deliver until `stop()`; any error of a round is logged and the next round tries
        again. After a failure of the server itself it waits RETRY_EVERY: asked every few
        seconds, a relay that is down would only be asked in vain."""
        from benchgen.services.benchmarks import outbox_delivery

        while not self.stopping.is_set():
            try:
                server_failed = self.run_once()
            except Exception as exc:
                log.warning("mail: delivery round failed, trying again (%s)", type(exc).__name__)
                server_failed = False
            self.stopping.wait(
                outbox_delivery.RETRY_EVERY.total_seconds() if server_failed else self.every_s
            )

    def run_once(self) -> bool:
        """Send every message due, each claimed in its own transaction and sent outside any;
        True when the round stopped at a failure of the server (the rest wait for the next)."""
        # Loaded here, by processes that send mail: `benchgen run` imports this module too, and
        # the outbox (with smtplib) was ~6 ms of its start.
        from benchgen.services.benchmarks import outbox_delivery

        while self.runtime.settings.smtp_url and not self.stopping.is_set():
            sent = send_next(self.runtime, MAILER, outbox_delivery.claim_waiting_mail)
            if sent is None:
                return False
            if sent[1].server_failed:
                return True
        return False

    def stop(self) -> None:
        """Finish the message being sent, then return from `run_forever`."""
        self.stopping.set()


def send_next(
    runtime: Runtime, principal: Principal, claim: Callable[[Context], ClaimedLetter | None]
) -> tuple[ClaimedLetter, Outcome] | None:
    """One message of a delivery round: claimed by `claim` in one short transaction, sent
    outside any, its outcome recorded in another; None when nothing was due.

    A slow mail server then holds no database lock (on SQLite every other writer would wait
    for it), and what was sent stays recorded whatever happens to the rest of the round.
    """
    from benchgen.services.benchmarks import outbox_delivery

    with transaction(runtime, principal) as ctx:
        claimed = claim(ctx)
    if claimed is None:
        return None
    outcome = outbox_delivery.send_claimed(runtime.settings, claimed)
    with transaction(runtime, principal) as ctx:
        outbox_delivery.record_sending(ctx, claimed, outcome)
    return claimed, outcome


def push_outbox(runtime: Runtime, principal: Principal, limit: int = 100) -> Delivered:
    """The operator's push (`benchgen admin outbox --deliver`): every waiting message now,
    failed ones too, each tried once, in the mail thread's rounds (`send_next`).

    Raises:
        PermissionDenied: `principal` is not the operator or an admin.
        Unavailable: the database was busy; what was sent before is recorded.
    """
    from benchgen.services.benchmarks import outbox_delivery

    tried: list[str] = []  # what failed in this push is not tried twice in it
    outcomes: list[str] = []
    while len(tried) < limit:
        sent = send_next(
            runtime, principal, lambda ctx: outbox_delivery.claim_for_operator(ctx, tried)
        )
        if sent is None:
            break
        tried.append(sent[0].letter.id)
        outcomes.append(sent[1].status)
    return outbox_delivery.Delivered(
        *(outcomes.count(status) for status in ("sent", "failed", "bounced"))
    )


def start_mailer(runtime: Runtime) -> tuple[Mailer, threading.Thread]:
    """Start the thread that delivers waiting mail (its rounds do nothing without SMTP)."""
    mailer = Mailer(runtime)
    thread = threading.Thread(target=mailer.run_forever, name="mailer", daemon=True)
    thread.start()
    return mailer, thread


Runner = Worker | Mailer | WebhookRounds


def start_workers(
    runtime: Runtime, count: int, kinds: frozenset[str] | None = None
) -> list[tuple[Runner, threading.Thread]]:
    """Start `count` worker threads (the embedded pool of `benchgen serve`, or `benchgen
    worker` without a broker) taking jobs of `kinds` (None: every kind), and with them the
    webhook thread and, when SMTP is configured, the mail thread."""
    started: list[tuple[Runner, threading.Thread]] = []
    for index in range(count):
        worker = Worker(runtime, kinds=kinds)
        thread = threading.Thread(target=worker.run_forever, name=f"worker-{index}", daemon=True)
        thread.start()
        started.append((worker, thread))
    if count:
        started.append(start_webhook_rounds(runtime))
    if count and runtime.settings.smtp_url:
        started.append(start_mailer(runtime))
    return started


def stop_workers(started: list[tuple[Runner, threading.Thread]], timeout_s: float = 10) -> None:
    """Ask every worker to stop and wait for them to finish their jobs, `timeout_s` in all;
    the jobs of those still busy then (or when a second Ctrl-C ends the wait) go back to the
    queue, for another worker to take at once."""
    for worker, _ in started:
        worker.stop()
    deadline = time.monotonic() + timeout_s
    try:
        for _, thread in started:
            thread.join(max(deadline - time.monotonic(), 0))
    finally:
        for worker, thread in started:
            if isinstance(worker, Worker) and thread.is_alive():
                worker.hand_back()
