"""The webhook thread: sends again, when due, the run webhooks whose receiver was away for a
while, and those whose sender died mid-send."""

from __future__ import annotations

import logging
import threading

from benchgen.jobs.handlers import WORKER, deliver
from benchgen.services.runs import notifications
from benchgen.services.runtime import Runtime, transaction

log = logging.getLogger(__name__)
# How often a process's webhook thread looks for webhooks due again: retries wait a minute at
# least, and the look is one indexed query.
WEBHOOK_ROUND_S = 30.0


class WebhookRounds:
    """One thread's loop sending due webhooks again. Every process with workers runs one; each
    webhook is claimed before it is sent, so two processes never send the same try."""

    def __init__(self, runtime: Runtime, every_s: float = WEBHOOK_ROUND_S) -> None:
        self.runtime, self.every_s = runtime, every_s
        self.stopping = threading.Event()

    def run_forever(self) -> None:
        """A round every `every_s` until `stop()`; an error of one round is logged and the
        next tries again."""
        while not self.stopping.wait(self.every_s):
            try:
                self.run_once()
            except Exception as exc:
                log.warning("webhooks: round failed, trying again (%s)", type(exc).__name__)

    def run_once(self) -> int:
        """Send every webhook due, each claimed in its own transaction and sent outside any;
        how many were sent (well or not)."""
        sent = 0
        while not self.stopping.is_set():
            with transaction(self.runtime, WORKER) as ctx:
                delivery = notifications.claim_due_webhook(ctx)
            if delivery is None:
                break
            deliver(self.runtime, delivery)
            sent += 1
        return sent

    def stop(self) -> None:
        """Finish the webhook being sent, then return from `run_forever`."""
        self.stopping.set()


def start_webhook_rounds(runtime: Runtime) -> tuple[WebhookRounds, threading.Thread]:
    """Start the thread that sends due webhooks again."""
    rounds = WebhookRounds(runtime)
    thread = threading.Thread(target=rounds.run_forever, name="webhooks", daemon=True)
    thread.start()
    return rounds, thread
