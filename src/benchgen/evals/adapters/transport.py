"""HTTP plumbing shared by the hosted-model adapters: pooled clients, statuses mapped to errors."""

from __future__ import annotations

import email.utils
import json
import time
from typing import Any

import httpx

from benchgen.evals.adapters.egress import guarded_transport
from benchgen.evals.redact import redact
from benchgen.evals.types import FatalModelError, RateLimitedError, RetryableError

_BODY_EXCERPT = 300
# Replies are read as a stream and given up past a cap, so a hostile or broken endpoint cannot
# make the worker hold an endless body in memory. Chat replies are a few KiB; 4 MiB is roomy.
MAX_REPLY_BYTES = 4 * 1024 * 1024
# Only an excerpt of an error body is ever shown; reading a little past it is enough.
_ERROR_BODY_BYTES = 16 * 1024
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
    Every connection goes to an address checked against `allowlist` when it opens (egress.py),
    and replies are read up to `max_reply_bytes`.
    """

    def __init__(
        self,
        timeout_s: float,
        concurrency: int,
        headers: dict[str, str],
        secrets: tuple[str, ...],
        *,
        allowlist: frozenset[str],
        max_reply_bytes: int = MAX_REPLY_BYTES,
    ) -> None:
        shards = max(1, -(-concurrency // _SHARD_CONNECTIONS))
        size = max(1, -(-concurrency // shards))
        # One TLS context for all shards: building one costs ~20 ms.
        tls = httpx.create_ssl_context()
        self._clients = [
            _client(timeout_s, headers, guarded_transport(allowlist, tls, _limits(size)))
            for _ in range(shards)
        ]
        self._busy = [0] * shards
        self._secrets = secrets
        self._max_reply_bytes = max_reply_bytes

    async def post_json(self, url: str, payload: dict[str, Any]) -> dict[str, Any]:
        """POST a JSON body and return the decoded JSON reply.

        Raises:
            RateLimitedError: 429, with the Retry-After delay when the server sent one.
            RetryableError: 408, 5xx, a timeout, a dropped connection or a garbled body.
            FatalModelError: a redirect (never followed), any other 4xx, a reply that is not
                a JSON object or is larger than `max_reply_bytes`, or an endpoint that
                resolves to an internal address the allow-list does not open.
        """
        shard = self._busy.index(min(self._busy))
        self._busy[shard] += 1
        try:
            response, body, complete = await self._exchange(self._clients[shard], url, payload)
        finally:
            self._busy[shard] -= 1
        _raise_for_status(response, body, self._secrets)
        if not complete:
            raise FatalModelError(f"reply larger than {_size(self._max_reply_bytes)}")
        return _json_object(response.status_code, body)

    async def _exchange(
        self, client: httpx.AsyncClient, url: str, payload: dict[str, Any]
    ) -> tuple[httpx.Response, bytes, bool]:
        """Send the request; the response, its body (capped) and whether the body is whole."""
        try:
            async with client.stream("POST", url, json=payload) as response:
                ok = 200 <= response.status_code < 300
                cap = self._max_reply_bytes if ok else _ERROR_BODY_BYTES
                body, complete = await _read_capped(response, cap)
        except httpx.TimeoutException as exc:
            raise RetryableError(f"no reply in time ({type(exc).__name__})") from None
        except httpx.TransportError as exc:
            message = redact(f"connection failed: {type(exc).__name__}: {exc}", self._secrets)
            raise RetryableError(message) from None
        except httpx.DecodingError as exc:  # a broken gzip stream, say
            message = redact(f"reply could not be decoded: {exc}", self._secrets)
            raise RetryableError(message) from None
        return response, body, complete

    async def aclose(self) -> None:
        """Close every connection."""
        for client in self._clients:
            await client.aclose()


def _limits(connections: int) -> httpx.Limits:
    return httpx.Limits(max_connections=connections, max_keepalive_connections=connections)


def _client(
    timeout_s: float, headers: dict[str, str], transport: httpx.AsyncHTTPTransport
) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        headers=headers,
        # The transport holds the connection limits and the egress guard.
        transport=transport,
        timeout=httpx.Timeout(timeout_s),
        # A redirect points at a URL nobody registered: refuse it rather than follow.
        follow_redirects=False,
        # Proxy variables would send traffic somewhere the endpoint check never looked at.
        trust_env=False,
    )


async def _read_capped(response: httpx.Response, cap: int) -> tuple[bytes, bool]:
    """The decoded body up to `cap` bytes, and whether that was all of it.

    Past the cap nothing more is read: leaving the stream closes the connection.
    """
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        if size + len(chunk) > cap:
            chunks.append(chunk[: cap - size])
            return b"".join(chunks), False
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks), True


def _size(count: int) -> str:
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if count >= scale and count % scale == 0:
            return f"{count // scale} {unit}"
    return f"{count} bytes"


def _json_object(status: int, body: bytes) -> dict[str, Any]:
    try:
        # json.loads detects UTF-8, -16 and -32 as httpx's Response.json() does.
        value = json.loads(body)
    except ValueError:  # UnicodeDecodeError included
        raise RetryableError(f"HTTP {status} reply is not valid JSON") from None
    if not isinstance(value, dict):
        raise FatalModelError("reply is not a JSON object")
    return value


def token_count(usage: object, key: str) -> int:
    """A token count from a usage block, 0 when the server left it out or sent nonsense."""
    value = usage.get(key) if isinstance(usage, dict) else None
    return value if isinstance(value, int) and value >= 0 else 0


def _raise_for_status(response: httpx.Response, body: bytes, secrets: tuple[str, ...]) -> None:
    status = response.status_code
    if 200 <= status < 300:
        return
    # Servers sometimes echo the request, key included: nothing of theirs is kept unredacted.
    # Redacting before cutting the excerpt keeps a key at its edge from showing in part.
    text = body.decode(response.encoding or "utf-8", errors="replace")
    detail = redact(text, secrets)[:_BODY_EXCERPT].strip()
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
