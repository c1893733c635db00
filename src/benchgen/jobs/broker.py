"""Dispatch through a Celery broker (Redis or RabbitMQ): messages carry only job ids, the job
table stays the truth, and a sweeper sends again what a lost message or a dead worker left."""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from datetime import timedelta
from typing import Any

from benchgen.core.config import Settings
from benchgen.core.errors import BenchGenError
from benchgen.jobs.handlers import WORKER
from benchgen.jobs.webhooks import start_webhook_rounds
from benchgen.jobs.worker import Worker, start_mailer
from benchgen.services import queue
from benchgen.services.runtime import Runtime, transaction

log = logging.getLogger(__name__)
TASK = "benchgen.job"
# Past the longest job: Redis hands an unacknowledged message to another worker after this
# (its default, an hour, would run a long training job twice); RabbitMQ drops a consumer that
# holds a message longer than its consumer timeout (30 minutes by default).
_SLACK_S = 3600
RETRY_S = 1.0  # a message whose job could not be claimed yet comes back this much later
# How long a publisher waits for Redis to connect or answer before the message is left to the
# sweeper (RabbitMQ's client gives up after its own 4 s).
PUBLISH_TIMEOUT_S = 3.0
# After a publish fails, this process's next ones fail at once for this long (their jobs are
# sent by the sweeper): each waited for the broker again, 4 to 6 s for one that accepts
# connections but does not answer, and held every request that queued a job meanwhile.
AWAY_AFTER_FAILURE_S = 10.0
# The longest gap, in sweep periods, between two sendings of a job that stays overdue.
MAX_RESEND_PERIODS = 8


def celery_app(settings: Settings) -> Any:
    """A Celery app on BENCHGEN_BROKER_URL: JSON messages only, acknowledged late (after the
    job), one message prefetched at a time, broker timeouts sized for training jobs."""
    try:
        from celery import Celery
        from kombu.entity import Queue
    except ImportError:
        # Without it, `benchgen worker` and `benchgen serve` ended in a traceback of
        # ModuleNotFoundError that named no setting and no extra.
        raise BenchGenError(
            "BENCHGEN_BROKER_URL is set, but Celery is not installed here: "
            "pip install 'benchgen[celery]' (or unset BENCHGEN_BROKER_URL)"
        ) from None

    url = settings.broker_url or ""
    app = Celery("benchgen", broker=url, set_as_current=False)
    longest_s = int(settings.training_max_hours * 3600) + _SLACK_S
    arguments = {"x-consumer-timeout": longest_s * 1000} if _is_amqp(url) else {}
    app.conf.update(
        task_serializer="json",
        accept_content=["json"],
        result_serializer="json",
        task_ignore_result=True,
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        broker_connection_retry_on_startup=True,
        broker_transport_options={"visibility_timeout": longest_s},
        task_queues=[_queue(Queue, name, arguments) for name in queue.QUEUES],
        task_default_queue="runs",
        worker_hijack_root_logger=False,
    )
    return app


def _is_amqp(url: str) -> bool:
    return url.startswith(("amqp", "pyamqp"))


def _queue(kind: Any, name: str, arguments: dict[str, int]) -> Any:
    return kind(name, routing_key=name, queue_arguments=arguments)


class BrokerAway(Exception):
    """A message not sent: a publish failed moments ago (the sweeper sends its job)."""


class CeleryDispatch:
    """Publishes a message naming each committed job on its kind's queue; for a while after a
    publish fails, fails at once (`AWAY_AFTER_FAILURE_S`)."""

    def __init__(self, settings: Settings) -> None:
        self.app = celery_app(settings)
        self.away_until = 0.0  # monotonic seconds: until then, publishing fails at once
        if not _is_amqp(settings.broker_url or ""):  # py-amqp's own connect timeout bounds it
            # Redis's client waits for ever by default: a broker that accepted connections but
            # did not answer (paused, overloaded) held the request that queued a job past its
            # commit, and one by one every thread of the web process. A message not sent is
            # sent by the sweeper: the job is in the table.
            self.app.conf.broker_transport_options = {
                **self.app.conf.broker_transport_options,
                "socket_timeout": PUBLISH_TIMEOUT_S,
                "socket_connect_timeout": PUBLISH_TIMEOUT_S,
            }

    def __call__(self, job_id: str, kind: str, countdown: float | None = None) -> None:
        if time.monotonic() < self.away_until:
            raise BrokerAway(f"a publish failed less than {AWAY_AFTER_FAILURE_S:g} s ago")
        name = queue.QUEUE_OF.get(kind, "runs")
        try:
            self.app.send_task(
                TASK, args=[job_id], queue=name, routing_key=name, countdown=countdown
            )
        except Exception:
            self.away_until = time.monotonic() + AWAY_AFTER_FAILURE_S
            raise

    def close(self) -> None:
        """Release the broker connection pool."""
        self.app.close()


def run_celery_worker(runtime: Runtime, queues: list[str], threads: int) -> int:
    """Consume `queues` until interrupted: each message's job is claimed from the table under
    the usual rules (lease, attempts, per-user slots), so a message delivered twice, or for a
    job already done, runs nothing. A sweeper thread sends again what waited too long.

    Returns Celery's exit status: 0 when asked to stop, else the failure it gave up on (a
    broker that restarted under a busy consumer), for the command to exit with."""
    kinds = frozenset().union(*(queue.QUEUES[name] for name in queues))
    app = celery_app(runtime.settings)
    dispatch = CeleryDispatch(runtime.settings)

    @app.task(name=TASK, acks_late=True)  # type: ignore[untyped-decorator]
    def run_job(job_id: str) -> None:
        handle_message(runtime, kinds, dispatch, job_id)

    stopping = threading.Event()
    sweeper = threading.Thread(
        target=sweep_forever, args=(runtime, dispatch, kinds, stopping), daemon=True
    )
    sweeper.start()
    mailer = start_mailer(runtime) if runtime.settings.smtp_url else None
    webhooks = start_webhook_rounds(runtime)
    consumer = app.Worker(
        # Celery's default node name is one per machine: a second worker there would answer
        # `celery inspect` and remote control under the first one's name.
        hostname=f"benchgen-{os.getpid()}@{socket.gethostname()}",
        queues=queues,
        pool="threads",
        concurrency=threads,
        loglevel="WARNING",
        quiet=True,
    )
    try:
        consumer.start()
    finally:
        stopping.set()
        if mailer is not None:
            mailer[0].stop()
        webhooks[0].stop()
        dispatch.close()
    return int(consumer.exitcode or 0)


def handle_message(
    runtime: Runtime, kinds: frozenset[str], dispatch: CeleryDispatch, job_id: str
) -> None:
    """One message: a turn in its queue, taken by its job unless a user with fewer executing
    runs waits there too (`queue.claim`); then send the next job the user of the job that ran
    waits with (a slot is free now). If nothing could be claimed while the message's job waits
    (another worker held its row for a moment), ask again shortly."""
    worker = Worker(runtime, kinds=kinds)
    if worker.run_once(job_id):
        with transaction(runtime, WORKER, write=False) as ctx:
            waiting = queue.next_for_user(ctx, worker.claimed or job_id)
        if waiting is not None:
            dispatch(*waiting)
        return
    with transaction(runtime, WORKER, write=False) as ctx:
        kind = queue.waiting_kind(ctx, job_id)
    if kind is not None:
        dispatch(job_id, kind, RETRY_S)


class Resends:
    """Which overdue jobs a sweep sends again: a job at once when first found late, then, while
    it stays late, after 1, 2, 4… sweep periods (MAX_RESEND_PERIODS at most).

    A late job is most often not lost but waiting in the broker's queue behind others (every
    worker busy). Sent again at every sweep by every worker process, the queue grew by the
    whole backlog each sweep for as long as the backlog lasted, and each copy cost a claim.
    """

    def __init__(self, period_s: float) -> None:
        self.period_s = period_s
        self.sent: dict[str, tuple[float, int]] = {}  # job id: (when last sent, times sent)

    def due(self, late: list[tuple[str, str]], now: float) -> list[tuple[str, str]]:
        """The jobs of `late` to send at `now` (monotonic seconds); forgets the jobs no longer
        late (claimed since)."""
        self.sent = {job_id: self.sent[job_id] for job_id, _ in late if job_id in self.sent}
        return [(job_id, kind) for job_id, kind in late if self._due(job_id, now)]

    def record(self, job_id: str, now: float) -> None:
        """`job_id` was sent at `now` (after `due`: a sending that failed is tried next sweep)."""
        times = self.sent.get(job_id, (now, 0))[1]
        self.sent[job_id] = (now, times + 1)

    def _due(self, job_id: str, now: float) -> bool:
        when, times = self.sent.get(job_id, (now, 0))
        gap = self.period_s * min(2 ** max(times - 1, 0), MAX_RESEND_PERIODS)
        return times == 0 or now - when >= gap


def sweep_forever(
    runtime: Runtime, dispatch: CeleryDispatch, kinds: frozenset[str], stopping: threading.Event
) -> None:
    """Every BENCHGEN_JOB_SWEEP_S, send again the jobs of `kinds` due that long ago that no
    live worker holds, less often the longer one stays late (`Resends`); claiming decides, so
    a duplicate runs nothing."""
    period = runtime.settings.job_sweep_s
    resends = Resends(period)
    while not stopping.wait(period):
        try:
            with transaction(runtime, WORKER, write=False) as ctx:
                late = queue.overdue_jobs(ctx, timedelta(seconds=period), kinds)
            now = time.monotonic()
            for job_id, kind in resends.due(late, now):
                dispatch(job_id, kind)
                resends.record(job_id, now)
        except Exception as exc:  # a busy database or a broker away: try at the next sweep
            log.warning("sweeper: %s", type(exc).__name__)
