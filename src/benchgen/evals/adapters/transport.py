"""HTTP plumbing shared by the hosted-model adapters: one client, status codes mapped to errors."""

from __future__ import annotations

import email.utils
import time
from typing import Any

import httpx

from benchgen.evals.redact import redact
from benchgen.evals.types import FatalModelError, RateLimitedError, RetryableError

_BODY_EXCERPT = 300


def make_client(
    timeout_s: float, max_connections: int, headers: dict[str, str]
) -> httpx.AsyncClient:
    """One pooled client per adapter, sized for the requests the engine keeps in flight."""
    return httpx.AsyncClient(
        headers=headers,
        timeout=httpx.Timeout(timeout_s),
        limits=httpx.Limits(
            max_connections=max_connections, max_keepalive_connections=max_connections
        ),
        # A redirect could lead past the endpoint check to an internal address: refuse it.
        follow_redirects=False,
        # Proxy variables would send traffic somewhere the endpoint check never looked at.
        trust_env=False,
    )


async def post_json(
    client: httpx.AsyncClient, url: str, payload: dict[str, Any], secrets: tuple[str, ...]
) -> dict[str, Any]:
    """POST a JSON body and return the decoded JSON reply.

    Raises:
        RateLimitedError: 429, with the Retry-After delay when the server sent one.
        RetryableError: 408, 5xx, a timeout, a dropped connection or a garbled body.
        FatalModelError: a redirect (never followed), any other 4xx, or a reply that is not a
            JSON object.
    """
    try:
        response = await client.post(url, json=payload)
    except httpx.TimeoutException as exc:
        raise RetryableError(f"no reply in time ({type(exc).__name__})") from None
    except httpx.TransportError as exc:
        message = redact(f"connection failed: {type(exc).__name__}: {exc}", secrets)
        raise RetryableError(message) from None
    _raise_for_status(response, secrets)
    try:
        body = response.json()
    except ValueError:
        raise RetryableError(f"HTTP {response.status_code} reply is not valid JSON") from None
    if not isinstance(body, dict):
        raise FatalModelError("reply is not a JSON object")
    return body


def token_count(usage: object, key: str) -> int:
    """A token count from a usage block, 0 when the server left it out or sent nonsense."""
    value = usage.get(key) if isinstance(usage, dict) else None
    return value if isinstance(value, int) and value >= 0 else 0


def _raise_for_status(response: httpx.Response, secrets: tuple[str, ...]) -> None:
    status = response.status_code
    if 200 <= status < 300:
        return
    # Servers sometimes echo the request, key included: nothing of theirs is kept unredacted.
    detail = redact(response.text[:_BODY_EXCERPT], secrets).strip()
    message = f"HTTP {status}: {detail}" if detail else f"HTTP {status}"
    if status == 429:
        raise RateLimitedError(message, _retry_after_s(response.headers.get("retry-after")))
    if status == 408 or status >= 500:
        raise RetryableError(message)
    if 300 <= status < 400:
        raise FatalModelError(f"HTTP {status}: redirect refused (endpoints must answer directly)")
    raise FatalModelError(message)


def _retry_after_s(value: str | None) -> float | None:
    """Retry-After is either seconds or an HTTP date."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())
