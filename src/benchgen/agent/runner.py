"""Chat turns off the caller's thread: answer within a wait, or `running` and finish later."""

from __future__ import annotations

import logging
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as WaitExpired

from benchgen.agent import replies
from benchgen.agent.brains import Brain
from benchgen.agent.messages import MessageIn
from benchgen.agent.turn import RECORDER, Claimed, claim_turn, run_turn
from benchgen.core.context import Principal
from benchgen.services import overrides
from benchgen.services.chat import conversations
from benchgen.services.chat.conversations import TurnView
from benchgen.services.runtime import Runtime, transaction

log = logging.getLogger(__name__)


class TurnRunner:
    """A pool of threads that think and act for chat turns, shared by one process's doors.

    Args:
        runtime: The process's runtime.
        brain: The brain every turn thinks with.
        threads: How many turns may think at once; more wait in line (and answer `running`).
    """

    def __init__(self, runtime: Runtime, brain: Brain, threads: int) -> None:
        self.runtime = runtime
        self.brain = brain
        self._threads = threads
        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="benchgen-turn")
        self._closed = False
        self._lock = threading.Lock()
        # Turns this process is running, stamped alive a few times a lease: if the process
        # dies, another one sees the stamps stop and releases their conversations.
        self._running: set[str] = set()
        self._stopped = threading.Event()
        self._beat = threading.Thread(
            target=self._heartbeat, name="benchgen-turn-beat", daemon=True
        )
        self._beat.start()

    def send(
        self, principal: Principal, conversation_id: str, message: MessageIn, wait_s: float
    ) -> TurnView:
        """Start a turn and wait up to `wait_s` seconds for it to end.

        The turn is claimed, screened and decided in the caller's thread, so refusals come back
        to the caller at once; the thinking and acting run on the pool, and the turn's cap and
        credential start only when a thread of the pool takes it up.

        Args:
            principal: The user chatting (web, API token or CLI door).
            conversation_id: One of the user's conversations.
            message: Typed words or a button's action.
            wait_s: Seconds to wait before answering with the turn still `running`.

        Returns:
            The finished turn, or the turn as stored (usually `running`) when the wait ran out.

        Raises:
            Conflict: a turn is already running, or the approval is stale, replayed or altered.
            NotFound: no such conversation (or proposal) of the user's.
            InvalidInput: the message is too long, or a choice names no option.
            PermissionDenied: the principal may not chat.
        """
        claimed = claim_turn(self.runtime, principal, conversation_id, message)
        future = self._submit(claimed)
        try:
            return future.result(timeout=wait_s)
        except WaitExpired:
            return self._stored(principal, claimed.turn)

    def _submit(self, claimed: Claimed) -> Future[TurnView]:
        turn_id = claimed.turn.id
        with self._lock:
            if not self._closed:
                if len(self._running) >= self._threads:
                    self._note_waiting(claimed)  # before the pool may start it and clear it
                self._running.add(turn_id)
                future = self._pool.submit(run_turn, claimed, self.brain)
                future.add_done_callback(_log_failure)
                future.add_done_callback(lambda _: self._running.discard(turn_id))
                return future
        # Shutting down: the turn is already claimed, so finish it here rather than leave the
        # conversation locked until the stale-turn margin releases it.
        done: Future[TurnView] = Future()
        done.set_result(run_turn(claimed, self.brain))
        return done

    def _note_waiting(self, claimed: Claimed) -> None:
        """Tell whoever reads the turn that it waits for a thread, not that it is working."""
        try:
            with transaction(self.runtime, RECORDER) as ctx:
                cap_s = int(overrides.effective(ctx, "agent_turn_cap_s"))
                conversations.note_running(ctx, claimed.turn.id, replies.waiting_for_thread(cap_s))
            claimed.waiting = True
        except Exception as exc:  # only a note: the turn still runs when a thread is free
            name = type(exc).__name__
            log.warning("chat turn %s: noting that it waits failed: %s", claimed.turn.id, name)

    def _stored(self, principal: Principal, turn: TurnView) -> TurnView:
        with transaction(self.runtime, principal, write=False) as ctx:
            return conversations.get_turn(ctx, turn.conversation_id, turn.id)

    def _heartbeat(self) -> None:
        interval = self.runtime.settings.agent_turn_lease_s / 3
        while not self._stopped.wait(interval):
            running = list(self._running)
            if not running:
                continue  # no write transaction (on SQLite, the write lock) for nothing
            try:
                with transaction(self.runtime, RECORDER) as ctx:
                    conversations.beat_turns(ctx, running)
            except Exception as exc:  # a busy database skips a beat; the lease outlasts three
                log.warning("chat turn heartbeat skipped: %s", type(exc).__name__)

    def close(self) -> None:
        """Take no more turns to the pool and wait for those running to be recorded."""
        with self._lock:
            self._closed = True
        self._pool.shutdown(wait=True)
        self._stopped.set()


def _log_failure(future: Future[TurnView]) -> None:
    # Nobody may be waiting on a turn that outlived its request: its failure must not vanish.
    error = future.exception()
    if error is not None:
        log.error("recording a chat turn failed", exc_info=error)
