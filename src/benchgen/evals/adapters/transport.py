"""HTTP plumbing shared by the hosted-model adapters: pooled clients, statuses mapped to errors."""

from __future__ import annotations

import email.utils
import ssl
import time
from typing import Any

import httpx

from benchgen.evals.redact import redact
from benchgen.evals.types import FatalModelError, RateLimitedError, RetryableError

_BODY_EXCERPT = 300
# httpcore's pool rescans every connection per request and lets requests race for one idle
# connection; against a local stub at 64 in flight (50 ms replies) one client of 64 connections
# managed 115 questions/s, eight clients of 8 about 900. So connections are split into shards.
_SHARD_CONNECTIONS = 8
# Connections open lazily, so a roomy default costs nothing and never caps the engine.
DEFAULT_CONCURRENCY = 64


class HttpPool:
    """The adapter's HTTP clients: `concurrency` connections in shards of at most eight.

    Each request goes to the least busy shard, so no shard's own pool queues while another has
    room. Redirects are never followed and proxy settings from the environment are ignored.
    """

    def __init__(
        self, timeout_s: float, concurrency: int, headers: dict[str, str], secrets: tuple[str, ...]
    ) -> None:
        shards = max(1, -(-concurrency // _SHARD_CONNECTIONS))
        size = max(1, -(-concurrency // shards))
        # One TLS context for all shards: building one costs ~20 ms.
        tls = httpx.create_ssl_context()
        self._clients = [_client(timeout_s, size, headers, tls) for _ in range(shards)]
        self._busy = [0] * shards
        self._secrets = secrets

    async def post_json(self, url: str, payload: dict[str, Any]) -> dict[str, Any]:
        """POST a JSON body and return the decoded JSON reply.

        Raises:
            RateLimitedError: 429, with the Retry-After delay when the server sent one.
            RetryableError: 408, 5xx, a timeout, a dropped connection or a garbled body.
            FatalModelError: a redirect (never followed), any other 4xx, or a reply that is
                not a JSON object.
        """
        shard = self._busy.index(min(self._busy))
        self._busy[shard] += 1
        try:
            response = await self._clients[shard].post(url, json=payload)
        except httpx.TimeoutException as exc:
            raise RetryableError(f"no reply in time ({type(exc).__name__})") from None
        except httpx.TransportError as exc:
            message = redact(f"connection failed: {type(exc).__name__}: {exc}", self._secrets)
            raise RetryableError(message) from None
        finally:
            self._busy[shard] -= 1
        _raise_for_status(response, self._secrets)
        return _json_object(response)

    async def aclose(self) -> None:
        """Close every connection."""
        for client in self._clients:
            await client.aclose()


def _client(
    timeout_s: float, connections: int, headers: dict[str, str], tls: ssl.SSLContext
) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        headers=headers,
        verify=tls,
        timeout=httpx.Timeout(timeout_s),
        limits=httpx.Limits(max_connections=connections, max_keepalive_connections=connections),
        # A redirect could lead past the endpoint check to an internal address: refuse it.
        follow_redirects=False,
        # Proxy variables would send traffic somewhere the endpoint check never looked at.
        trust_env=False,
    )


def _json_object(response: httpx.Response) -> dict[str, Any]:
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
