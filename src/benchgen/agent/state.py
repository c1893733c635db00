"""What one turn carries between its tool calls: the credential, the limits, and what happened."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, is_dataclass
from datetime import datetime, timedelta
from typing import Any, Generic, TypeVar

from benchgen.agent.credential import HARNESS, TurnCredential
from benchgen.core.clock import Clock
from benchgen.core.context import Context
from benchgen.core.errors import BenchGenError, Unauthenticated
from benchgen.core.secrets import Finding, find_secrets, redact_secrets
from benchgen.services.accounts import leaks
from benchgen.services.chat import proposals
from benchgen.services.runtime import transaction

T = TypeVar("T")
P = TypeVar("P")
R = TypeVar("R")
log = logging.getLogger(__name__)
MAX_LOGGED_ARGS = 2000
# A tool result larger than this is not fed back to the brain: it is told to ask for less.
MAX_RESULT_CHARS = 60_000
# The same tool with the same arguments this many times in a row, and the next such call ends the
# turn instead of being made: a brain that asks again for what it just read is going round in
# circles (SmolLM2 asked for one made-up training job 25 times in a turn, until the step limit).
REPEATS_ALLOWED = 2
# Tool calls in one turn: a real task takes a few dozen; past this a brain is flooding (a
# hostile one made 6,000 calls in a turn, each kept in the transcript and fed back to it).
MAX_TOOL_CALLS = 200


@dataclass(frozen=True)
class Staged(Generic[P, R, T]):
    """A tool's work in three steps, so that its slow middle holds no unit of work: `check` in
    one that only reads, `slow` (an organiser's programs, for seconds or minutes) with none
    open, then `store` in a short write, which checks every rule again. On SQLite a write
    transaction holds the lock of the whole database: every other write would wait for it."""

    check: Callable[[Context], P]
    slow: Callable[[P], R]
    store: Callable[[Context, R], T]


class TurnOver(Exception):
    """Raised by a tool when the turn must stop now: the cap was reached, or the credential
    (or the token or account behind it) is no longer valid."""


@dataclass
class TurnState:
    """The dependencies of every tool in one turn (never sent to a brain).

    Attributes:
        credential: the turn credential, used for every service call.
        conversation_id: the conversation the turn belongs to.
        request: the user's words this turn (a chosen option's label for a choice); a model
            named nowhere in them is marked as the agent's pick in a run proposal.
        clock: the runtime's clock; `deadline` is when the turn cap is reached.
        part_size: benchmarks with more questions are proposed part by part.
        cap_s: the turn cap in seconds that `deadline` came from, for the reply that says so.
        notes: facts the platform tells the brain (a proposal was declined…), never model text.
        notices: what the user is told about this turn (a token found in data was revoked…).
    """

    credential: TurnCredential
    conversation_id: str
    request: str
    clock: Clock
    deadline: datetime
    part_size: int
    cap_s: int = 0
    notes: list[str] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    proposal: proposals.ProposalView | None = None
    question: str | None = None
    options: list[str] = field(default_factory=list)
    plan: dict[str, Any] | None = None
    plan_changed: bool = False
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    lead: str = ""
    capped: bool = False
    lost_access: bool = False
    # The brain's API key: a call whose arguments hold it is refused, as one holding a secret.
    brain_key: str | None = field(default=None, repr=False)
    circling: str | None = None  # the tool a brain kept calling alike, once that ended the turn
    flooding: bool = False  # the brain reached MAX_TOOL_CALLS, which ended the turn
    # The latest call, its tool and whole arguments (the transcript keeps them cut and
    # redacted), and how many times in a row it was made.
    latest_call: tuple[str, str] | None = field(default=None, repr=False)
    latest_count: int = 0
    # Brains may call several tools in one step, and pydantic-ai runs them at once: proposing
    # and asking are serialised so that only the first of them can end the turn (A8).
    asking: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def waiting(self) -> bool:
        """True once the turn has a proposal or a question for the user: it must stop."""
        return self.proposal is not None or self.question is not None

    def over_cap(self) -> bool:
        """True (and remembered) once the turn's time cap has passed."""
        if self.clock.now() >= self.deadline:
            self.capped = True
        return self.capped

    def remaining_s(self) -> float:
        """Seconds left before the cap (0 once it has passed)."""
        return max(0.0, (self.deadline - self.clock.now()).total_seconds())

    def call(
        self,
        tool: str,
        args: dict[str, Any],
        work: Callable[[Context], T] | Staged[Any, Any, T],
        write: bool = True,
    ) -> T | dict[str, Any]:
        """Run one service call as the agent and log it; a domain error becomes a result the
        brain can read, so a refusal is an answer, not a crash. `Staged` work opens a unit of
        work for each of its ends, each authenticating the credential afresh.

        Any other exception is logged and becomes a fixed tool error: its text may hold
        internals (or data) that neither the brain nor the user should see.

        Raises:
            TurnOver: the turn cap has been reached, the turn made MAX_TOOL_CALLS calls, or
                the brain made this same call the REPEATS_ALLOWED times before (nothing was
                called in these cases), or the credential no longer authenticates (A4).
        """
        if self.over_cap():
            raise TurnOver
        # Scanned once: the same findings redact the transcript's copy and refuse the call.
        text = _as_text(args)
        findings = find_secrets(text)
        entry: dict[str, Any] = {"tool": tool, "args": _logged(args, findings), "ok": True}
        self._count_call()
        if self._made_again(tool, args) > REPEATS_ALLOWED:
            self.tool_calls.append(entry | {"ok": False, "error": "repeated"})
            self.circling = tool
            raise TurnOver
        self.tool_calls.append(entry)
        if findings or (self.brain_key and self.brain_key in text):
            # The brain wrote a secret (one it read, or made up) into a call: nothing is done
            # with it, and a live BenchGen token in it is revoked (A14, A15).
            self._screened(args, leaks.Origin.REPLY)
            entry["ok"], entry["error"] = False, "secret_in_arguments"
            return self.refusal("secret_in_arguments")
        try:
            result = self._run(work, write)
        except Unauthenticated:
            entry["ok"], entry["error"] = False, "unauthenticated"
            self.lost_access = True
            raise TurnOver from None
        except BenchGenError as exc:
            entry["ok"], entry["error"] = False, exc.code
            return self._screened({"error": {"code": exc.code, "message": exc.message}})
        except Exception:
            log.exception("agent tool %s failed", tool)
            entry["ok"], entry["error"] = False, "tool_failed"
            return self.refusal("tool_failed")
        return bounded(self._screened(result)) if isinstance(result, dict) else result

    def _run(self, work: Callable[[Context], T] | Staged[Any, Any, T], write: bool) -> T:
        if not isinstance(work, Staged):
            with self.credential.context(write) as ctx:
                return work(ctx)
        with self.credential.context(write=False) as ctx:
            pending = work.check(ctx)
        ready = work.slow(pending)
        with self.credential.context() as ctx:
            return work.store(ctx, ready)

    def _count_call(self) -> None:
        """Stop the turn before the call past MAX_TOOL_CALLS (nothing of it is made).

        Raises:
            TurnOver: the turn has made MAX_TOOL_CALLS calls already.
        """
        if len(self.tool_calls) >= MAX_TOOL_CALLS:
            self.flooding = True
            raise TurnOver

    def _made_again(self, tool: str, args: dict[str, Any]) -> int:
        """Note a call; how many times in a row it has now been made (1: not just before)."""
        made = (tool, json.dumps(args, sort_keys=True, ensure_ascii=False, default=str))
        self.latest_count = self.latest_count + 1 if made == self.latest_call else 1
        self.latest_call = made
        return self.latest_count

    def _screened(
        self, result: dict[str, Any], origin: leaks.Origin = leaks.Origin.TOOL_OUTPUT
    ) -> dict[str, Any]:
        """The result with every secret redacted before a brain reads it; a live BenchGen token
        in it (a benchmark's text, a run log, an error) is revoked at once (A15)."""
        if not find_secrets(_as_text(result)):
            return result  # the common case: no write transaction for a read tool
        # Its own unit of work: a read tool's session must not take a write lock.
        with transaction(self.credential.runtime, HARNESS) as ctx:
            screened = leaks.screen_value(ctx, result, origin)
        self.notices.extend(screened.notices)
        return dict(screened.value)

    def screened_text(self, text: str) -> str:
        """A whole text as a brain may read it, screened as a tool result is (see `_screened`):
        for a tool that shows it a page at a time, since pages scanned one by one would miss a
        secret that a page boundary cuts in two."""
        return str(self._screened({"text": text})["text"])

    def log(self, tool: str, args: dict[str, Any]) -> None:
        """Record a call that needed no service (it only shapes the turn's answer).

        Raises:
            TurnOver: past MAX_TOOL_CALLS.
        """
        self._count_call()
        self._made_again(tool, args)
        self.tool_calls.append({"tool": tool, "args": _logged(args), "ok": True})

    def remember(self, tool: str, args: dict[str, Any], error: str) -> dict[str, Any]:
        """Log a call the harness refused before any service was reached, and say why.

        Raises:
            TurnOver: past MAX_TOOL_CALLS.
        """
        self._count_call()
        self._made_again(tool, args)
        self.tool_calls.append({"tool": tool, "args": _logged(args), "ok": False, "error": error})
        return self.refusal(error)

    @staticmethod
    def refusal(error: str) -> dict[str, Any]:
        """A tool error the platform words itself."""
        return {"error": {"code": error, "message": _REFUSALS[error]}}


_REFUSALS = {
    "secret_in_arguments": "The arguments hold a secret (a key or a token). The platform never "
    "passes one on: nothing was done. Leave it out.",
    "waiting_for_user": "A proposal or question is already waiting for the user; this turn "
    "ends with it. Nothing else can be proposed until the user answers.",
    "tool_failed": "The tool failed on the server with these arguments. Nothing was changed; "
    "try other arguments or tell the user it did not work.",
    "result_too_large": f"The result is larger than {MAX_RESULT_CHARS} characters. Ask for a "
    "smaller page (a lower limit) or fewer items.",
}


def bounded(result: Any) -> Any:
    """A tool result the brain may read, or a refusal when it is too large to feed back."""
    size = len(_as_text(result))
    return result if size <= MAX_RESULT_CHARS else TurnState.refusal("result_too_large")


def plain(value: Any) -> Any:
    """A service result as JSON-ready data (`TurnState.call` screens it for secrets)."""
    if is_dataclass(value) and not isinstance(value, type):
        value = asdict(value)
    if isinstance(value, dict):
        return {str(key): plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [plain(item) for item in value]
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, timedelta):
        return value.total_seconds()
    return value


def _as_text(value: Any) -> str:
    """Arguments or a result as one text: what is scanned for secrets and measured."""
    return json.dumps(value, ensure_ascii=False, default=str)


def _logged(args: dict[str, Any], findings: Sequence[Finding] | None = None) -> str:
    """Arguments as stored in the transcript: screened (with `findings` of `_as_text(args)`
    when the caller has them), and cut short when long."""
    text = redact_secrets(_as_text(args), findings)
    return text if len(text) <= MAX_LOGGED_ARGS else text[:MAX_LOGGED_ARGS] + "…"
