"""A typed Python client for BenchGen's HTTP API (`/api/v1`), built on httpx (synchronous).

It runs on a user's machine against a remote server, so it imports nothing of the server
(services, storage, routes): only httpx and the standard library. Responses come back as plain
dicts described by `TypedDict`s (timestamps stay ISO 8601 strings); failures raise a
`ClientError` subclass chosen from the error envelope's `code` and the HTTP status.

Example:
    A benchmark, a run of a built-in baseline model, and its results::

        from benchgen.client import BenchGen

        with BenchGen("http://127.0.0.1:8000", "bgp_…") as bg:
            created = bg.create_benchmark(
                "Capitals", "qa", [{"prompt": "Capital of France?", "answer": "Paris"}]
            )
            run = bg.start_run(created["benchmark"]["id"], "mdl_builtin_echo")
            done = bg.wait_for_run(run["id"])
            print(done["status"], done["summary"].get("accuracy"))
            for row in bg.results(done["id"]):
                print(row["position"], row["raw"])
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from types import TracebackType
from typing import Any, Literal, Self, TypedDict, cast
from urllib.parse import quote

import httpx

from benchgen import __version__

__all__ = [
    "FINAL_STATUSES",
    "BenchGen",
    "Benchmark",
    "Button",
    "ChangePreview",
    "ClientError",
    "Conflict",
    "Conversation",
    "CreatedBenchmark",
    "EditedBenchmark",
    "Estimate",
    "Frozen",
    "InsufficientCredits",
    "InvalidInput",
    "Leaderboard",
    "LeaderboardRow",
    "LedgerLine",
    "LogLine",
    "Me",
    "Model",
    "NotFound",
    "PermissionDenied",
    "Proposal",
    "Question",
    "QuotaStatus",
    "RateLimited",
    "Rescore",
    "Run",
    "RunTimeout",
    "ServerError",
    "Transcript",
    "Turn",
    "TurnRecord",
    "TurnTimeout",
    "Unauthenticated",
    "Unreachable",
    "as_input",
]

API_PREFIX = "/api/v1"
FINAL_STATUSES = frozenset({"completed", "failed", "cancelled"})
"""Statuses a run never leaves; `wait_for_run` returns when it reaches one."""
TURN_RUNNING = "running"
"""The one status a chat turn leaves on its own; `wait_for_turn` returns once it has."""

Format = Literal["qa", "mcq"]
# Page sizes below each route's maximum: the server fetches one row more than asked to learn
# whether another page follows, and some services refuse that extra row at the maximum.
_PAGE = 100
_RESULTS_PAGE = 500
# The server holds a chat message up to its agent wait (60 s by default) before answering
# `running`, so that request needs longer than the client's usual timeout.
_CHAT_TIMEOUT = 120.0


# ---------------------------------------------------------------- response shapes


class Me(TypedDict):
    """The token's user, credit balance, scopes and expiry."""

    id: str
    email: str
    display_name: str
    credits: int
    scopes: list[str]
    token_id: str | None
    token_expires_at: str | None


class LedgerLine(TypedDict):
    """One line of the credit ledger (grant, reservation, settlement, refund)."""

    id: str
    kind: str
    amount: int
    reference: str
    note: str
    door: str
    created_at: str


class Benchmark(TypedDict):
    """A benchmark as the token's user may see it."""

    id: str
    title: str
    description: str
    format: str
    visibility: str
    owner_id: str
    version: int
    question_count: int
    questions_frozen: bool
    created_door: str
    created_at: str
    updated_at: str
    published_at: str | None
    roles: list[str]
    can_see_key: bool


class Question(TypedDict):
    """A stored question; `answer` is None unless you own or collaborate on the benchmark."""

    position: int
    prompt: str
    choices: dict[str, str] | None
    answer: str | list[str] | None
    tags: list[str]


class CreatedBenchmark(TypedDict):
    """A new benchmark and the warnings found on the way (duplicates are not errors)."""

    benchmark: Benchmark
    warnings: list[dict[str, Any]]


class ChangePreview(TypedDict):
    """What a change does (or would do): metadata diffs, question diffs, versions, warnings."""

    benchmark_id: str
    metadata: dict[str, dict[str, str]]
    questions: dict[str, Any] | None
    version_before: int
    version_after: int
    warnings: list[dict[str, Any]]


class EditedBenchmark(TypedDict):
    """The changed benchmark and what the change did."""

    benchmark: Benchmark
    change: ChangePreview


class LeaderboardRow(TypedDict):
    """One ranked entry of a leaderboard."""

    rank: int
    run_id: str
    model_name: str
    submitted_by: str
    scores: dict[str, Any]
    score_edited: bool
    finished_at: str | None


class Leaderboard(TypedDict):
    """A phase's leaderboard: its columns (primary first) and ranked rows."""

    benchmark_id: str
    phase_id: str
    columns: list[str]
    rows: list[LeaderboardRow]


class Model(TypedDict):
    """A model you may run: a platform model or one of your own (never its key)."""

    id: str
    name: str
    kind: str
    endpoint_model: str
    base_url: str | None
    owner: Literal["platform", "you"]
    has_api_key: bool
    price_per_question: int
    price_per_1k_tokens: int
    status: str
    formats: list[str]


class Estimate(TypedDict):
    """The most a run would cost, in credits (reserved when it starts)."""

    benchmark_id: str
    model_id: str
    model_name: str
    question_count: int
    credits: int
    basis: str


class Run(TypedDict):
    """A run: status, progress, cost and aggregate scores (`summary["accuracy"]`, …)."""

    id: str
    benchmark_id: str
    phase_id: str
    model_id: str
    model_name: str
    status: str
    benchmark_version: int
    scoring: dict[str, Any]
    question_count: int
    done_count: int
    error_count: int
    estimated_cost: int
    cost: int | None
    judge_input_tokens: int
    judge_output_tokens: int
    input_tokens: int
    output_tokens: int
    summary: dict[str, Any]
    scores: dict[str, Any]
    score_edited: bool
    launched_by: str
    door: str
    error: str
    created_at: str
    started_at: str | None
    finished_at: str | None
    detail_visible: bool


class LogLine(TypedDict):
    """One line of a run's log; pass the last `id` as `after` to follow a live run."""

    id: int
    at: str
    line: str


class Rescore(TypedDict):
    """What rescoring did (`applied`) or would do; `changes` only for the benchmark's team."""

    run_id: str
    applied: bool
    scoring: dict[str, Any]
    before: dict[str, Any]
    after: dict[str, Any]
    changed_count: int
    changes: list[dict[str, Any]]


class Conversation(TypedDict):
    """A conversation with the agent, kept on the server."""

    id: str
    title: str
    created_at: str
    updated_at: str
    busy: bool
    turn_count: int


class Button(TypedDict):
    """A control shown with a reply: send `action` back verbatim with `send_message`."""

    label: str
    action: dict[str, Any]


class Proposal(TypedDict):
    """What the agent proposes, pending approval; `preview["text"]` is its plain rendering."""

    id: str
    kind: str
    preview: dict[str, Any]
    preview_hash: str
    expires_at: str
    status: str


class Turn(TypedDict):
    """One chat turn: `status` is `completed`, `awaiting_approval`, `awaiting_choice`,
    `stopped_at_cap`, `running` or `failed`."""

    turn_id: str
    conversation_id: str
    seq: int
    status: str
    reply: str
    buttons: list[Button]
    proposal: Proposal | None
    notices: list[str]


class TurnRecord(Turn):
    """A turn in a transcript: also what was sent, the agent's tool calls, and when."""

    user_text: str
    action: dict[str, Any] | None
    tool_calls: list[dict[str, Any]]
    brain: str
    started_at: str
    finished_at: str | None


class Transcript(Conversation):
    """A conversation and every turn, oldest first."""

    turns: list[TurnRecord]


@dataclass(frozen=True)
class QuotaStatus:
    """The creation quota the server reported with the last benchmark creation or import.

    Attributes:
        limit: Creations allowed in the tighter rolling window.
        remaining: Creations left in that window.
        reset_at: When the window has room again (UTC).
    """

    limit: int
    remaining: int
    reset_at: datetime


# ---------------------------------------------------------------- errors


class ClientError(Exception):
    """Base of every error the client raises for a failed request.

    Attributes:
        status: The HTTP status (0 when no response arrived).
        code: The envelope's machine-readable code, e.g. `not_found`.
        message: The server's human-readable message.
        details: The envelope's `details` object (may be empty).
    """

    def __init__(
        self, status: int, code: str, message: str, details: Mapping[str, Any] | None = None
    ) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.details: dict[str, Any] = dict(details or {})


class Unauthenticated(ClientError):
    """401: the token is missing, malformed, expired or revoked."""


class PermissionDenied(ClientError):
    """403: the token's user may not do this, or the token lacks the scope."""


class NotFound(ClientError):
    """404: it does not exist, or the token's user may not know that it exists."""


class Conflict(ClientError):
    """409: the object's state does not allow the change (already done, in use, …)."""


class Frozen(Conflict):
    """409 `frozen`: a benchmark's questions cannot change once a run was accepted."""


class InvalidInput(ClientError):
    """422: malformed input or a broken rule; `errors` lists each problem and its place."""

    @property
    def errors(self) -> list[dict[str, Any]]:
        """Each problem as `{"loc": [...], "msg": "..."}`."""
        found = self.details.get("errors", [])
        return list(found) if isinstance(found, list) else []


class InsufficientCredits(ClientError):
    """402: the balance cannot cover the most the run could cost."""

    @property
    def needed(self) -> int | None:
        """Credits the job needs at most."""
        value = self.details.get("needed")
        return value if isinstance(value, int) else None

    @property
    def balance(self) -> int | None:
        """The balance when the request was refused."""
        value = self.details.get("balance")
        return value if isinstance(value, int) else None


class RateLimited(ClientError):
    """429: a rolling-window limit is reached.

    Attributes:
        retry_after: Seconds to wait before trying again (from `Retry-After`), if sent.
    """

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        details: Mapping[str, Any] | None = None,
        retry_after: int | None = None,
    ) -> None:
        super().__init__(status, code, message, details)
        self.retry_after = retry_after


class ServerError(ClientError):
    """5xx: the server failed; retrying later may help."""


class Unreachable(ClientError):
    """No response: the server could not be reached or did not answer in time (status 0)."""


class RunTimeout(TimeoutError):
    """`wait_for_run` gave up before the run reached a final status.

    Attributes:
        run: The run as last seen.
    """

    def __init__(self, run: Run, timeout_s: float) -> None:
        super().__init__(
            f"Run {run['id']} is still {run['status']} after {timeout_s:g} s "
            f"({run['done_count']}/{run['question_count']} questions)."
        )
        self.run = run


class TurnTimeout(TimeoutError):
    """`wait_for_turn` gave up while the turn was still running.

    Attributes:
        turn: The turn as last seen.
    """

    def __init__(self, turn: Turn, timeout_s: float) -> None:
        super().__init__(f"Turn {turn['turn_id']} is still running after {timeout_s:g} s.")
        self.turn = turn


_BY_CODE: dict[str, type[ClientError]] = {
    "unauthenticated": Unauthenticated,
    "permission_denied": PermissionDenied,
    "not_found": NotFound,
    "conflict": Conflict,
    "frozen": Frozen,
    "invalid_input": InvalidInput,
    "rate_limited": RateLimited,
    "insufficient_credits": InsufficientCredits,
}
_BY_STATUS: dict[int, type[ClientError]] = {
    401: Unauthenticated,
    402: InsufficientCredits,
    403: PermissionDenied,
    404: NotFound,
    409: Conflict,
    422: InvalidInput,
    429: RateLimited,
}


def error_from_response(response: httpx.Response) -> ClientError:
    """The typed exception for a failed response (envelope code first, then HTTP status).

    Args:
        response: A response with a 4xx or 5xx status.

    Returns:
        The exception to raise; bodies that are not the envelope get code `http_error`.
    """
    status = response.status_code
    code, message, details = "http_error", response.reason_phrase or "HTTP error", {}
    try:
        body = response.json()
    except ValueError:
        body = None
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        code = str(error.get("code") or code)
        message = str(error.get("message") or message)
        if isinstance(error.get("details"), dict):
            details = error["details"]
    elif response.text:
        message = response.text[:500]
    kind = _BY_CODE.get(code) or _BY_STATUS.get(status)
    if kind is None:
        kind = ServerError if status >= 500 else ClientError
    if kind is RateLimited:
        return RateLimited(status, code, message, details, _retry_after(response))
    return kind(status, code, message, details)


def _retry_after(response: httpx.Response) -> int | None:
    value = response.headers.get("Retry-After")
    if value is None:
        return None
    if value.strip().isdigit():
        return int(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0, round((when - datetime.now(UTC)).total_seconds()))


# ---------------------------------------------------------------- the client


class BenchGen:
    """A synchronous client for one BenchGen server and one personal API token.

    Use it as a context manager (or call `close()`) to release its connections. Every method
    raises a `ClientError` subclass when the request fails.

    Args:
        base_url: The server's address, e.g. `http://127.0.0.1:8000` (a trailing `/api/v1` is
            accepted too).
        token: A personal API token (`bgp_…`); when None, the `BENCHGEN_TOKEN` variable.
        timeout: Seconds to wait for each response.
        transport: An httpx transport to use instead of the network (tests, proxies).

    Raises:
        ValueError: No token was given and `BENCHGEN_TOKEN` is empty.
    """

    def __init__(
        self,
        base_url: str,
        token: str | None = None,
        timeout: float = 30,
        *,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        secret = token or os.environ.get("BENCHGEN_TOKEN", "")
        if not secret:
            raise ValueError("Give a personal API token (bgp_…) or set BENCHGEN_TOKEN.")
        root = base_url.rstrip("/")
        root = root.removesuffix(API_PREFIX)
        self.base_url = root
        self._timeout = timeout
        self.quota: QuotaStatus | None = None
        """Creation quota reported by the last successful create or import, if any."""
        self._http = httpx.Client(
            base_url=root + API_PREFIX,
            headers={
                "Authorization": f"Bearer {secret}",
                "User-Agent": f"benchgen-client/{__version__}",
                "Accept": "application/json",
            },
            timeout=timeout,
            transport=transport,
        )

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    # ------------------------------------------------------------ account

    def me(self) -> Me:
        """The token's user, credit balance, scopes and expiry.

        Returns:
            The user behind the token.
        """
        return cast(Me, self._json("GET", "/me"))

    def credits(self) -> list[LedgerLine]:
        """The whole credit ledger, newest first (every page).

        Returns:
            Grants, reservations, settlements and refunds.
        """
        return cast(list[LedgerLine], list(self._pages("/credits", {}, _PAGE)))

    # ------------------------------------------------------------ benchmarks

    def list_benchmarks(self, mine: bool = False, search: str = "") -> list[Benchmark]:
        """Benchmarks you can see, following every page.

        Args:
            mine: Only benchmarks you own.
            search: Words to look for in titles and descriptions.

        Returns:
            Yours, those shared with you, and published ones (unless `mine`).
        """
        params: dict[str, Any] = {"mine": mine}
        if search:
            params["search"] = search
        return cast(list[Benchmark], list(self._pages("/benchmarks", params, _PAGE)))

    def get_benchmark(self, benchmark_id: str) -> Benchmark:
        """One benchmark.

        Args:
            benchmark_id: Its id (`bm_…`).

        Returns:
            The benchmark.

        Raises:
            NotFound: It does not exist or you may not see it.
        """
        return cast(Benchmark, self._json("GET", f"/benchmarks/{_seg(benchmark_id)}"))

    def questions(self, benchmark_id: str) -> list[Question]:
        """All questions of a benchmark, in order (answers only for its team).

        Args:
            benchmark_id: The benchmark's id.

        Returns:
            The questions, every page.
        """
        path = f"/benchmarks/{_seg(benchmark_id)}/questions"
        return cast(list[Question], list(self._pages(path, {}, 10000)))

    def create_benchmark(
        self,
        title: str,
        format: Format,
        questions: Sequence[Mapping[str, Any]],
        description: str = "",
    ) -> CreatedBenchmark:
        """Create a qa or mcq benchmark with its questions (counts against the creation limit).

        Args:
            title: The benchmark's title.
            format: `qa` (free answers) or `mcq` (multiple choice).
            questions: Each `{"prompt", "answer", "choices"?, "tags"?, "metadata"?}`; for mcq the
                answer is a choice letter (`"B"`) or the choice's text.
            description: Optional longer description.

        Returns:
            The benchmark and any warnings (e.g. duplicate questions).

        Raises:
            InvalidInput: A question or field is wrong; `errors` says where.
            RateLimited: Too many creations; wait `retry_after` seconds.
        """
        body = {
            "title": title,
            "format": format,
            "description": description,
            "questions": [dict(question) for question in questions],
        }
        response = self._send("POST", "/benchmarks", json=body)
        self._note_quota(response)
        return cast(CreatedBenchmark, response.json())

    def import_benchmark(
        self,
        title: str,
        format: Format,
        content: str,
        content_format: Literal["jsonl", "csv"] = "jsonl",
        description: str = "",
    ) -> CreatedBenchmark:
        """Create a benchmark from the text of a JSONL or CSV file (counts against the limit).

        Args:
            title: The benchmark's title.
            format: `qa` or `mcq`.
            content: The file's text, e.g. `Path("qs.jsonl").read_text()`.
            content_format: `jsonl` (one question object per line) or `csv` (a header row).
            description: Optional longer description.

        Returns:
            The benchmark and any warnings.

        Raises:
            InvalidInput: A line or column is wrong; `errors` says where.
            RateLimited: Too many creations; wait `retry_after` seconds.
        """
        body = {
            "title": title,
            "format": format,
            "description": description,
            "content_format": content_format,
            "content": content,
        }
        response = self._send("POST", "/benchmarks/import", json=body)
        self._note_quota(response)
        return cast(CreatedBenchmark, response.json())

    def change_benchmark(
        self,
        benchmark_id: str,
        title: str | None = None,
        description: str | None = None,
        questions: Sequence[Mapping[str, Any]] | None = None,
    ) -> EditedBenchmark:
        """Change the title, description and/or the full question list (None: unchanged).

        Args:
            benchmark_id: The benchmark's id.
            title: A new title.
            description: A new description.
            questions: The complete new question list (replaces the old one).

        Returns:
            The changed benchmark and what the change did.

        Raises:
            Frozen: Questions cannot change once a run was accepted.
        """
        body = _change_body(title, description, questions)
        path = f"/benchmarks/{_seg(benchmark_id)}"
        return cast(EditedBenchmark, self._json("PATCH", path, json=body))

    def preview_change(
        self,
        benchmark_id: str,
        title: str | None = None,
        description: str | None = None,
        questions: Sequence[Mapping[str, Any]] | None = None,
    ) -> ChangePreview:
        """What `change_benchmark` with the same arguments would do; applies nothing.

        Args:
            benchmark_id: The benchmark's id.
            title: A new title.
            description: A new description.
            questions: The complete new question list.

        Returns:
            The diff, the versions before and after, and warnings.
        """
        body = _change_body(title, description, questions)
        path = f"/benchmarks/{_seg(benchmark_id)}/preview-change"
        return cast(ChangePreview, self._json("POST", path, json=body))

    def publish(self, benchmark_id: str) -> Benchmark:
        """Make a benchmark visible to everyone (its questions, never the answer key).

        Args:
            benchmark_id: The benchmark's id.

        Returns:
            The published benchmark.
        """
        path = f"/benchmarks/{_seg(benchmark_id)}/publish"
        return cast(Benchmark, self._json("POST", path))

    def leaderboard(self, benchmark_id: str, phase_id: str | None = None) -> Leaderboard:
        """The ranked leaderboard of a phase.

        Args:
            benchmark_id: The benchmark's id.
            phase_id: The phase (the first one when None).

        Returns:
            Columns and ranked rows.
        """
        params = {"phase_id": phase_id} if phase_id else None
        path = f"/benchmarks/{_seg(benchmark_id)}/leaderboard"
        return cast(Leaderboard, self._json("GET", path, params=params))

    # ------------------------------------------------------------ models

    def models(self, benchmark_id: str | None = None) -> list[Model]:
        """Models you may run: the platform's first, then your own.

        Args:
            benchmark_id: Only the models that can answer this benchmark's questions.

        Returns:
            Every model with its prices, status and the formats it answers.
        """
        params = {"benchmark_id": benchmark_id} if benchmark_id else {}
        return cast(list[Model], list(self._pages("/models", params, None)))

    def get_model(self, model_id: str) -> Model:
        """One model you may use.

        Args:
            model_id: Its id (`mdl_…`).

        Returns:
            The model.
        """
        return cast(Model, self._json("GET", f"/models/{_seg(model_id)}"))

    def create_model(
        self,
        name: str,
        endpoint_model: str,
        base_url: str | None = None,
        kind: Literal["openai_compat", "anthropic"] = "openai_compat",
        api_key: str | None = None,
        params: Mapping[str, Any] | None = None,
    ) -> Model:
        """Register your own OpenAI-compatible or Anthropic endpoint (your key pays).

        Args:
            name: A name to show on leaderboards.
            endpoint_model: The model's name at the endpoint, e.g. `qwen2.5-7b-instruct`.
            base_url: The endpoint's base URL (`…/v1`); optional for `anthropic`.
            kind: `openai_compat` or `anthropic`.
            api_key: The endpoint's key; stored encrypted, never shown again.
            params: `max_tokens`, `timeout_s`, `seed`.

        Returns:
            The new model.

        Raises:
            InvalidInput: A refused address (private networks) or bad parameters.
        """
        body: dict[str, Any] = {"name": name, "kind": kind, "endpoint_model": endpoint_model}
        if base_url is not None:
            body["base_url"] = base_url
        if api_key is not None:
            body["api_key"] = api_key
        if params is not None:
            body["params"] = dict(params)
        return cast(Model, self._json("POST", "/models", json=body))

    def update_model(
        self,
        model_id: str,
        name: str | None = None,
        api_key: str | None = None,
        params: Mapping[str, Any] | None = None,
    ) -> Model:
        """Rename one of your models, rotate its key or change its parameters.

        Args:
            model_id: Its id.
            name: A new name.
            api_key: A new key.
            params: New parameters (replace the old ones).

        Returns:
            The changed model.
        """
        body: dict[str, Any] = {}
        if name is not None:
            body["name"] = name
        if api_key is not None:
            body["api_key"] = api_key
        if params is not None:
            body["params"] = dict(params)
        return cast(Model, self._json("PATCH", f"/models/{_seg(model_id)}", json=body))

    # ------------------------------------------------------------ runs

    def estimate(self, benchmark_id: str, model_id: str) -> Estimate:
        """The most a run would cost, in credits.

        Args:
            benchmark_id: The benchmark's id.
            model_id: The model's id.

        Returns:
            The estimate and how it was computed.
        """
        params = {"benchmark_id": benchmark_id, "model_id": model_id}
        return cast(Estimate, self._json("GET", "/runs/estimate", params=params))

    def start_run(self, benchmark_id: str, model_id: str, phase_id: str | None = None) -> Run:
        """Queue a run; reserves the estimate and freezes the benchmark's questions.

        Args:
            benchmark_id: The benchmark's id.
            model_id: The model's id, e.g. the baseline `mdl_builtin_first`.
            phase_id: The phase (the first one when None).

        Returns:
            The queued run.

        Raises:
            InsufficientCredits: The balance cannot cover the estimate.
        """
        body: dict[str, Any] = {"benchmark_id": benchmark_id, "model_id": model_id}
        if phase_id is not None:
            body["phase_id"] = phase_id
        return cast(Run, self._json("POST", "/runs", json=body))

    def list_runs(self, benchmark_id: str | None = None) -> list[Run]:
        """Runs you launched and runs on benchmarks you own or collaborate on (every page).

        Args:
            benchmark_id: Only runs on this benchmark.

        Returns:
            The runs, newest first.
        """
        params = {"benchmark_id": benchmark_id} if benchmark_id else {}
        return cast(list[Run], list(self._pages("/runs", params, _PAGE)))

    def run(self, run_id: str) -> Run:
        """One run's status, progress, cost and aggregate scores.

        Args:
            run_id: Its id (`run_…`).

        Returns:
            The run.
        """
        return cast(Run, self._json("GET", f"/runs/{_seg(run_id)}"))

    def wait_for_run(
        self,
        run_id: str,
        timeout_s: float = 600,
        poll_s: float = 1.0,
        on_progress: Callable[[Run], None] | None = None,
    ) -> Run:
        """Poll a run until it is completed, failed or cancelled.

        Args:
            run_id: The run's id.
            timeout_s: Give up after this many seconds.
            poll_s: Seconds between polls.
            on_progress: Called with the run after every poll (e.g. to print `done_count`).

        Returns:
            The run in its final status.

        Raises:
            RunTimeout: It was still going after `timeout_s` (the run itself goes on).
        """
        deadline = time.monotonic() + timeout_s
        while True:
            current = self.run(run_id)
            if on_progress is not None:
                on_progress(current)
            if current["status"] in FINAL_STATUSES:
                return current
            left = deadline - time.monotonic()
            if left <= 0:
                raise RunTimeout(current, timeout_s)
            time.sleep(min(poll_s, left))

    def results(self, run_id: str) -> list[dict[str, Any]]:
        """Every per-question result of a run, in question order.

        Args:
            run_id: The run's id.

        Returns:
            Rows with `position`, `prompt`, `raw`, `error`, tokens and latency; the benchmark's
            team also gets `expected`, `extracted`, `outcome`, `correct` and `score`.
        """
        return list(self._pages(f"/runs/{_seg(run_id)}/results", {}, _RESULTS_PAGE))

    def log(self, run_id: str, after: int = 0) -> list[LogLine]:
        """A run's log lines after the line id `after` (every page).

        Args:
            run_id: The run's id.
            after: The last line id already seen (0: from the start).

        Returns:
            The lines, oldest first; pass the last one's `id` next time to follow a live run.
        """
        lines: list[LogLine] = []
        path = f"/runs/{_seg(run_id)}/log"
        while True:
            page = self._json("GET", path, params={"after": after, "limit": 5000})
            lines.extend(cast(list[LogLine], page["items"]))
            if not page.get("next_cursor") or not page["items"]:
                return lines
            after = int(page["next_cursor"])

    def export(self, run_id: str, format: Literal["jsonl", "csv"] = "jsonl") -> str:
        """A run's predictions and per-question breakdown as the text of a file.

        Args:
            run_id: The run's id.
            format: `jsonl` or `csv`.

        Returns:
            The file's text, e.g. to write with `Path("run.csv").write_text(...)`.
        """
        path = f"/runs/{_seg(run_id)}/export"
        return self._send("GET", path, params={"format": format}).text

    def cancel(self, run_id: str) -> Run:
        """Cancel a queued run (refunded) or stop a running one (settles what it used).

        Args:
            run_id: The run's id.

        Returns:
            The run after the request.

        Raises:
            Conflict: The run has already ended.
        """
        return cast(Run, self._json("POST", f"/runs/{_seg(run_id)}/cancel"))

    def rescore(
        self, run_id: str, scoring: Mapping[str, Any] | None = None, apply: bool = False
    ) -> Rescore:
        """Re-apply scoring to a finished run's saved answers; calls no model.

        Args:
            run_id: The run's id.
            scoring: Other settings, e.g. `{"method": "f1", "options": {"threshold": 0.5}}`
                (owner and collaborators only); None rescoring with the run's own.
            apply: Store the new scores; False is a dry run.

        Returns:
            Aggregates before and after, and which answers change.
        """
        body = {"scoring": dict(scoring)} if scoring is not None else None
        params = {"apply": "true" if apply else "false"}
        path = f"/runs/{_seg(run_id)}/rescore"
        return cast(Rescore, self._json("POST", path, params=params, json=body))

    # ------------------------------------------------------------ chat

    def create_conversation(self, title: str = "") -> Conversation:
        """Start an empty conversation with the agent (scope `read`).

        Args:
            title: An optional title.

        Returns:
            The new conversation; pass its `id` to `send_message`.
        """
        body = {"title": title} if title else None
        return cast(Conversation, self._json("POST", "/chat/conversations", json=body))

    def list_conversations(self) -> list[Conversation]:
        """Your conversations, most recently active first (every page).

        Returns:
            The conversations, without their turns.
        """
        return cast(list[Conversation], list(self._pages("/chat/conversations", {}, _PAGE)))

    def get_conversation(self, conversation_id: str) -> Transcript:
        """A conversation's transcript.

        Args:
            conversation_id: Its id (`conv_…`).

        Returns:
            The conversation and every turn, oldest first.
        """
        path = f"/chat/conversations/{_seg(conversation_id)}"
        return cast(Transcript, self._json("GET", path))

    def send_message(
        self,
        conversation_id: str,
        text: str | None = None,
        action: Mapping[str, Any] | None = None,
    ) -> Turn:
        """Send typed words, or a button's `action` exactly as it came (give one of the two).

        The server waits up to its agent wait (60 s by default); a longer turn comes back
        `running`: follow it with `wait_for_turn`.

        Args:
            conversation_id: The conversation's id.
            text: What you type.
            action: A button's `action`, e.g. `turn["buttons"][0]["action"]` to approve.

        Returns:
            The turn: its status, reply, buttons and any proposal.

        Raises:
            Conflict: Another turn of this conversation is running, or the approval is stale,
                replayed or altered.
            InvalidInput: Both or neither of `text` and `action`, or a malformed action.
        """
        body: dict[str, Any] = {}
        if text is not None:
            body["text"] = text
        if action is not None:
            body["action"] = dict(action)
        path = f"/chat/conversations/{_seg(conversation_id)}/messages"
        return cast(
            Turn, self._json("POST", path, json=body, timeout=max(self._timeout, _CHAT_TIMEOUT))
        )

    def get_turn(self, conversation_id: str, turn_id: str) -> Turn:
        """One turn, e.g. to see whether a `running` one is done.

        Args:
            conversation_id: The conversation's id.
            turn_id: The turn's id (`turn_id` of `send_message`'s answer).

        Returns:
            The turn as it stands.
        """
        path = f"/chat/conversations/{_seg(conversation_id)}/turns/{_seg(turn_id)}"
        return cast(Turn, self._json("GET", path))

    def wait_for_turn(
        self, conversation_id: str, turn_id: str, timeout_s: float = 900, poll_s: float = 1.0
    ) -> Turn:
        """Poll a turn until it is no longer `running`.

        Args:
            conversation_id: The conversation's id.
            turn_id: The turn's id.
            timeout_s: Give up after this many seconds (the server's turn cap is 900 s).
            poll_s: Seconds between polls.

        Returns:
            The turn once it has ended or waits for you.

        Raises:
            TurnTimeout: It was still running after `timeout_s`.
        """
        deadline = time.monotonic() + timeout_s
        while True:
            current = self.get_turn(conversation_id, turn_id)
            if current["status"] != TURN_RUNNING:
                return current
            left = deadline - time.monotonic()
            if left <= 0:
                raise TurnTimeout(current, timeout_s)
            time.sleep(min(poll_s, left))

    # ------------------------------------------------------------ plumbing

    def _send(
        self,
        method: str,
        path: str,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
        timeout: float | None = None,
    ) -> httpx.Response:
        # Passed only when set: httpx reads an explicit `timeout=None` as "wait for ever".
        extra: dict[str, Any] = {} if timeout is None else {"timeout": timeout}
        try:
            response = self._http.request(method, path, params=params, json=json, **extra)
        except httpx.TransportError as exc:
            raise Unreachable(0, "unreachable", f"{type(exc).__name__}: {exc}") from exc
        if response.is_error:
            raise error_from_response(response)
        return response

    def _json(
        self,
        method: str,
        path: str,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
        timeout: float | None = None,
    ) -> dict[str, Any]:
        body = self._send(method, path, params, json, timeout).json()
        if not isinstance(body, dict):
            raise ClientError(200, "bad_response", "expected a JSON object")
        return body

    def _pages(
        self, path: str, params: Mapping[str, Any], limit: int | None
    ) -> Iterator[dict[str, Any]]:
        query = dict(params)
        if limit is not None:
            query["limit"] = limit
        while True:
            page = self._json("GET", path, params=query)
            yield from page["items"]
            cursor = page.get("next_cursor")
            if not cursor:
                return
            query["cursor"] = cursor

    def _note_quota(self, response: httpx.Response) -> None:
        headers = response.headers
        try:
            self.quota = QuotaStatus(
                int(headers["X-RateLimit-Limit"]),
                int(headers["X-RateLimit-Remaining"]),
                datetime.fromtimestamp(int(headers["X-RateLimit-Reset"]), UTC),
            )
        except (KeyError, ValueError):
            self.quota = None


def as_input(question: Mapping[str, Any]) -> dict[str, Any]:
    """A question as `questions()` returns it, in the shape creating or changing accepts.

    Drops `position` and empty fields and turns lettered `choices` back into a list, so a
    question list can be read, edited and sent back::

        qs = [as_input(q) for q in bg.questions(benchmark_id)]
        bg.change_benchmark(benchmark_id, questions=[*qs, {"prompt": "4+4?", "answer": "8"}])

    Args:
        question: A question read from the API (or already in input form).

    Returns:
        A new dict with `prompt`, `answer` and, when present, `choices`, `tags`, `metadata`.
    """
    made = {k: v for k, v in question.items() if k != "position" and v is not None}
    choices = made.get("choices")
    if isinstance(choices, Mapping):
        made["choices"] = [choices[letter] for letter in sorted(choices)]
    return made


def _seg(identifier: str) -> str:
    """An id made safe to put in a URL path (ids never contain these, but input may)."""
    return quote(identifier, safe="")


def _change_body(
    title: str | None, description: str | None, questions: Sequence[Mapping[str, Any]] | None
) -> dict[str, Any]:
    body: dict[str, Any] = {}
    if title is not None:
        body["title"] = title
    if description is not None:
        body["description"] = description
    if questions is not None:
        body["questions"] = [dict(question) for question in questions]
    return body
