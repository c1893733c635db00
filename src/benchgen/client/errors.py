"""The exceptions the client raises, and the choice of one from a failed response."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

import httpx

from benchgen.client.shapes import Run, Turn


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


class Stale(Conflict):
    """412 `conflict`: a change sent with `if_match` was made from a state the benchmark has
    left (someone changed it since): nothing was saved. Read it again, apply the change to what
    is there now, and send it with the new tag.

    Attributes:
        details: `changed` (which of `questions`, `title`, `description` changed), `etag` (the
            tag now), and the `title`, `description` and `version` now.
    """

    @property
    def changed(self) -> list[str]:
        """What changed since the tag sent: `questions`, `title` and/or `description`."""
        found = self.details.get("changed", [])
        return [str(part) for part in found] if isinstance(found, list) else []

    @property
    def etag(self) -> str | None:
        """The benchmark's tag now (what a read now would answer)."""
        value = self.details.get("etag")
        return value if isinstance(value, str) else None


class TooLarge(ClientError):
    """413: the request body is over the route's limit (2 MiB; 32 MiB for imports)."""

    @property
    def limit_bytes(self) -> int | None:
        """The route's limit in bytes, as the server reported it."""
        value = self.details.get("limit_bytes")
        return value if isinstance(value, int) else None


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


class _SaysWhen(ClientError):
    """An error that may say how long to wait before trying again."""

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


class RateLimited(_SaysWhen):
    """429: a rolling-window limit is reached.

    Attributes:
        retry_after: Seconds to wait before trying again (from `Retry-After`), if sent.
    """


class ServerError(ClientError):
    """5xx: the server failed; retrying later may help."""


class Unavailable(_SaysWhen, ServerError):
    """503 `unavailable`: the server was too busy and changed nothing; send it again later.

    A `ServerError`, so code that already catches those keeps working.

    Attributes:
        retry_after: Seconds to wait before sending the same request again (from
            `Retry-After`, else `details.retry_after`), if the server said.
    """


class BadResponse(ClientError):
    """A success status with a body the call cannot use (code `bad_response`): not a JSON
    object, or a download of another media type, e.g. the HTML page of a proxy, a sign-in
    portal or a server that is not BenchGen. `status` is the one that came back."""


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


# The envelope's code decides first (two codes share 409); the status is the fallback for
# bodies that are not the envelope, e.g. a proxy's HTML page.
_BY_CODE: dict[str, type[ClientError]] = {
    "unauthenticated": Unauthenticated,
    "permission_denied": PermissionDenied,
    "not_found": NotFound,
    "conflict": Conflict,
    "frozen": Frozen,
    "too_large": TooLarge,
    "invalid_input": InvalidInput,
    "rate_limited": RateLimited,
    "insufficient_credits": InsufficientCredits,
    "unavailable": Unavailable,
}
# A code the server sends with more than one status: `conflict` is a 409, or a 412 when the
# change's If-Match names a state the benchmark has left.
_BY_CODE_AND_STATUS: dict[tuple[str, int], type[ClientError]] = {("conflict", 412): Stale}
_BY_STATUS: dict[int, type[ClientError]] = {
    401: Unauthenticated,
    402: InsufficientCredits,
    403: PermissionDenied,
    404: NotFound,
    409: Conflict,
    412: Stale,
    413: TooLarge,
    422: InvalidInput,
    429: RateLimited,
    503: Unavailable,
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
    else:
        message = _not_the_api(response)
    kind = _BY_CODE_AND_STATUS.get((code, status)) or _BY_CODE.get(code) or _BY_STATUS.get(status)
    if kind is None:
        kind = ServerError if status >= 500 else ClientError
    if kind is RateLimited:
        return RateLimited(status, code, message, details, _retry_after(response))
    if kind is Unavailable:
        # The header is the HTTP way to say it; the envelope repeats it for clients that only
        # read bodies, and a proxy in between may have dropped the header.
        wait = _retry_after(response)
        if wait is None and isinstance(details.get("retry_after"), int):
            wait = details["retry_after"]
        return Unavailable(status, code, message, details, wait)
    return kind(status, code, message, details)


def _not_the_api(response: httpx.Response) -> str:
    """A failure that is not BenchGen's error envelope, in words: where it came from, its
    status, and what to check. It said only "Not Found" or "Internal Server Error" (the words
    of a proxy, or of a `--url` copied from the browser with a page's path in it), which told
    no one that the address was wrong or the server behind it down."""
    try:
        asked = str(response.request.url.copy_with(query=None))
    except RuntimeError:  # a response made by hand, never sent
        asked = "the server"
    said = f"{asked} answered {response.status_code} {response.reason_phrase}".rstrip()
    text = response.text.strip()
    plain = "html" not in response.headers.get("content-type", "")
    if text and plain and text.casefold() != response.reason_phrase.casefold():
        # A proxy's own words (an HTML page's say nothing a person needs: its status does).
        said += f" ({text[:500]})"
    if response.status_code == 404:
        return f"{said}; give the server's own address, without a page's path after it"
    if response.status_code >= 500:
        return f"{said}; the server, or a proxy in front of it, failed: try again later"
    return said


def _retry_after(response: httpx.Response) -> int | None:
    """`Retry-After` in seconds: it is either a number of seconds or an HTTP date."""
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
