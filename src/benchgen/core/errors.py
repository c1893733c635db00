"""The one domain error hierarchy; every edge maps it once (API envelope, web page, agent text)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from benchgen.core.clock import iso_utc


class BenchGenError(Exception):
    """Base of every error a service may raise on purpose."""

    code = "error"
    http_status = 400

    def __init__(self, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details: dict[str, Any] = details or {}


class Unauthenticated(BenchGenError):
    """No valid credential, or a wrong password."""

    code = "unauthenticated"
    http_status = 401


class PermissionDenied(BenchGenError):
    """The principal is known but may not do this."""

    code = "permission_denied"
    http_status = 403


class NotFound(BenchGenError):
    """The object does not exist, or the principal may not know that it exists."""

    code = "not_found"
    http_status = 404


class Conflict(BenchGenError):
    """The object's state does not allow the change (already done, replaced, in use)."""

    code = "conflict"
    http_status = 409


class Frozen(Conflict):
    """Questions of a qa/mcq benchmark cannot change once a run has been accepted."""

    code = "frozen"


class InvalidInput(BenchGenError):
    """Malformed input or a broken rule; `details["errors"]` lists each problem and its place."""

    code = "invalid_input"
    http_status = 422

    def __init__(self, message: str, errors: list[dict[str, Any]] | None = None) -> None:
        super().__init__(message, {"errors": errors or []})
        self.errors = errors or []


class RateLimited(BenchGenError):
    """A rolling-window limit is reached; `retry_at` says when the next attempt can succeed."""

    code = "rate_limited"
    http_status = 429

    def __init__(self, message: str, retry_at: datetime, limit: int, window: str) -> None:
        super().__init__(message, {"retry_at": iso_utc(retry_at), "limit": limit, "window": window})
        self.retry_at = retry_at
        self.limit = limit
        self.window = window


class InsufficientCredits(BenchGenError):
    """The balance cannot cover the most the job could cost."""

    code = "insufficient_credits"
    http_status = 402

    def __init__(self, needed: int, balance: int) -> None:
        super().__init__(
            f"This needs up to {needed} credits but the balance is {balance}.",
            {"needed": needed, "balance": balance},
        )


class Unavailable(BenchGenError):
    """The database is busy (locked, out of connections, a serialisation conflict): nothing was
    changed, and the same request may succeed after `retry_after` seconds."""

    code = "unavailable"
    http_status = 503

    def __init__(self, message: str, retry_after: int = 1) -> None:
        super().__init__(message, {"retry_after": retry_after})
        self.retry_after = retry_after


def invalid(loc: list[str | int], message: str) -> InvalidInput:
    """One-problem InvalidInput whose message names the place."""
    where = ".".join(str(part) for part in loc)
    return InvalidInput(f"{where}: {message}" if where else message, [{"loc": loc, "msg": message}])


def invalid_all(errors: list[dict[str, Any]], where: str = "") -> InvalidInput:
    """InvalidInput for every problem in `errors` (each a `loc` and a `msg`): the message names
    the first, at `where` when given (else its `loc`), and counts the others."""
    first = errors[0]
    where = where or ".".join(str(part) for part in first["loc"])
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return InvalidInput(f"{where}: {first['msg']}{more}" if where else first["msg"] + more, errors)
