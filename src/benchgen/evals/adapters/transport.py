"""HTTP plumbing shared by the hosted-model adapters: a lean HTTP/1.1 client on asyncio streams
(h11 parses), with connections kept alive, guarded at connect time, and statuses mapped to errors.

httpx spent about 1.8 ms of CPU per request against a local stub (pool bookkeeping, anyio and
sniffio layers, a streamed body), most of a run's CPU per question; this client spends under half
a millisecond. It does only what the adapters need: POST a JSON body, read a JSON reply up to a
cap, over http or https, never through a proxy, never following a redirect.
"""

from __future__ import annotations

import asyncio
import codecs
import email.utils
import json
import re
import ssl
import time
from typing import Any

import h11

from benchgen.evals import netguard
from benchgen.evals.adapters.egress import open_guarded, trusted_tls
from benchgen.evals.adapters.http11 import (
    Connection,
    Origin,
    Reply,
    Stale,
    parse_origin,
    require_sendable,
    round_trip,
)
from benchgen.evals.redact import redact
from benchgen.evals.types import FatalModelError, RateLimitedError, RetryableError

_BODY_EXCERPT = 300
# Replies are read up to a cap and given up past it, so a hostile or broken endpoint cannot
# make the worker hold an endless body in memory. Chat replies are a few KiB; 4 MiB is roomy.
MAX_REPLY_BYTES = 4 * 1024 * 1024
# More tokens than any model reads and writes in one reply (the longest contexts hold ten
# million): a server's count past it is no count. Stored as is, 2**40 failed its batch at every
# retry on PostgreSQL (a 32-bit column), and the run was refunded in full, its replies free.
MAX_REPLY_TOKENS = 16_000_000
# Connections open lazily, so a roomy default costs nothing and never caps the engine.
DEFAULT_CONCURRENCY = 64
# An idle connection is reused for this long, as httpx did; servers close idle ones sooner or
# later, and a request on a connection they just closed would fail for nothing.
_KEEPALIVE_S = 5.0
_CHARSET = re.compile(r"charset=\"?([\w.:-]+)", re.IGNORECASE)


class HttpPool:
    """The adapter's connections: at most `concurrency` at once, kept alive between requests.

    Every connection goes to an address checked against `allowlist` when it opens (egress.py),
    replies are read up to `max_reply_bytes`, and `timeout_s` bounds each request whole
    (connecting included). `tls` replaces the default certificate store (tests).

    Raises:
        FatalModelError: a header value that cannot be sent (a line break in a key, say).
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
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self._timeout_s = timeout_s
        self._slots = asyncio.Semaphore(max(1, concurrency))
        self._headers = tuple(headers.items())
        self._secrets = secrets
        self._allowed = netguard.normalized(allowlist)
        self._max_reply_bytes = max_reply_bytes
        self._tls = tls
        self._origins: dict[str, Origin] = {}
        self._idle: dict[tuple[str, str, int], list[Connection]] = {}
        require_sendable(self._headers)

    async def post_json(self, url: str, payload: dict[str, Any]) -> dict[str, Any]:
        """POST a JSON body and return the decoded JSON reply.

        Raises:
            RateLimitedError: 429, with the Retry-After delay when the server sent one.
            RetryableError: 408, 5xx (with the Retry-After delay when the server sent one), a
                timeout, a dropped connection or a garbled reply.
            FatalModelError: a redirect (never followed), any other 4xx, a TLS certificate
                that does not verify, a reply that is not a JSON object or is larger than
                `max_reply_bytes`, a URL that is not http(s), or an endpoint that resolves to
                an internal address the allow-list does not open.
        """
        origin = self._origin(url)
        body = _encode(payload)
        async with self._slots:
            reply = await self._send(origin, body)
        _raise_for_status(reply, self._secrets)
        if not reply.complete:
            raise FatalModelError(f"reply larger than {_size(self._max_reply_bytes)}")
        return _json_object(reply)

    async def aclose(self) -> None:
        """Close every idle connection."""
        for connections in self._idle.values():
            for connection in connections:
                connection.close()
        self._idle.clear()

    def _origin(self, url: str) -> Origin:
        origin = self._origins.get(url)
        if origin is None:
            origin = self._origins[url] = parse_origin(url, self._headers)
        return origin

    async def _send(self, origin: Origin, body: bytes) -> Reply:
        """One request on a kept-alive or new connection, within the timeout."""
        try:
            async with asyncio.timeout(self._timeout_s):
                connection = self._reuse(origin)
                if connection is not None:
                    try:
                        return await self._exchange(connection, origin, body, reused=True)
                    except Stale:
                        pass  # closed by the server while idle: once more, on a new connection
                connection = await self._open(origin)
                return await self._exchange(connection, origin, body, reused=False)
        except TimeoutError:
            raise RetryableError(f"no reply in time ({self._timeout_s:g} s)") from None
        except ssl.SSLCertVerificationError as exc:
            # Asking again meets the same certificate: every question would wait out its
            # retries and back-offs for an error that only the endpoint's owner can fix.
            reason = exc.verify_message or exc.reason or "not trusted"
            raise FatalModelError(f"the endpoint's TLS certificate was refused: {reason}") from None
        except (OSError, h11.RemoteProtocolError) as exc:
            message = redact(f"connection failed: {type(exc).__name__}: {exc}", self._secrets)
            raise RetryableError(message) from None

    def _reuse(self, origin: Origin) -> Connection | None:
        idle = self._idle.get((origin.scheme, origin.host, origin.port))
        now = time.monotonic()
        while idle:
            connection = idle.pop()
            if now - connection.idle_since < _KEEPALIVE_S and not connection.reader.at_eof():
                return connection
            connection.close()
        return None

    async def _open(self, origin: Origin) -> Connection:
        tls = None
        if origin.scheme == "https":
            if self._tls is None:
                self._tls = trusted_tls()
            tls = self._tls
        reader, writer = await open_guarded(origin.host, origin.port, self._allowed, tls)
        return Connection(reader, writer, h11.Connection(h11.CLIENT))

    async def _exchange(
        self, connection: Connection, origin: Origin, body: bytes, reused: bool
    ) -> Reply:
        """Send the request and read the reply; keep the connection when it can serve again."""
        try:
            reply = await round_trip(connection, origin, body, self._max_reply_bytes, reused)
        except BaseException:
            connection.close()
            raise
        protocol = connection.protocol
        # Bytes past the reply's end (a server that sent it twice) would be read as the next
        # question's reply, and every later one on the connection a question late.
        done = protocol.our_state is protocol.their_state is h11.DONE
        if reply.complete and done and not protocol.trailing_data[0]:
            protocol.start_next_cycle()
            connection.idle_since = time.monotonic()
            self._idle.setdefault((origin.scheme, origin.host, origin.port), []).append(connection)
        else:
            connection.close()
        return reply


def _encode(payload: dict[str, Any]) -> bytes:
    try:
        text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except ValueError as exc:
        raise FatalModelError(f"the request cannot be sent as JSON: {exc}") from None
    return text.encode()


def _size(count: int) -> str:
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if count >= scale and count % scale == 0:
            return f"{count // scale} {unit}"
    return f"{count} bytes"


def _json_object(reply: Reply) -> dict[str, Any]:
    try:
        value = _loads(reply)
    except ValueError:  # UnicodeDecodeError included
        raise RetryableError(f"HTTP {reply.status} reply is not valid JSON") from None
    except RecursionError:  # "[[[[…" a few thousand deep: valid JSON, but no reply
        raise RetryableError(f"HTTP {reply.status} reply nests too deeply to read") from None
    if not isinstance(value, dict):
        raise FatalModelError("reply is not a JSON object")
    return value


def _loads(reply: Reply) -> Any:
    try:
        return json.loads(reply.body)  # it detects UTF-8, -16 and -32
    except UnicodeDecodeError:
        # Else the charset the reply declares (an old server's Latin-1 failed at every retry);
        # not tried first, since servers that say Latin-1 often send UTF-8.
        charset = _charset(reply.headers)
        try:
            text = reply.body.decode(charset)
        except (LookupError, UnicodeError):  # a codec that is no charset ("hex") raises these
            raise ValueError(charset) from None
        return json.loads(text)


def not_an_answer(body: dict[str, Any], what: str, secrets: tuple[str, ...]) -> Exception:
    """The failure for a 2xx reply that is not `what` ("an OpenAI chat completion"): retryable
    when it carries an error object instead, as gateways send for an upstream's failure
    (OpenRouter answers 200 with `{"error": {"message": …, "code": 502}}`)."""
    error = body.get("error")
    if not error:
        return FatalModelError(f"reply is not {what}")
    detail = (error.get("message") or error) if isinstance(error, dict) else error
    text = redact(str(detail), secrets)[:_BODY_EXCERPT].strip()
    return RetryableError(f"the endpoint answered with an error: {text}")


def no_answer_text(field: str, reason: object) -> FatalModelError:
    """The failure for a reply with no text, naming why the server says it stopped."""
    why = f" ({field} {str(reason)[:40]!r})" if reason is not None else ""
    return FatalModelError(f"reply holds no answer text{why}")


def token_count(usage: object, key: str) -> int:
    """A token count from a usage block, 0 when the server left it out or sent nonsense, at
    most `MAX_REPLY_TOKENS`."""
    value = usage.get(key) if isinstance(usage, dict) else None
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        return 0
    return min(value, MAX_REPLY_TOKENS)


def _raise_for_status(reply: Reply, secrets: tuple[str, ...]) -> None:
    status = reply.status
    if 200 <= status < 300:
        return
    # Servers sometimes echo the request, key included: nothing of theirs is kept unredacted.
    # Redacting before cutting the excerpt keeps a key at its edge from showing in part.
    text = _text(reply)
    detail = redact(text, secrets)[:_BODY_EXCERPT].strip()
    message = f"HTTP {status}: {detail}" if detail else f"HTTP {status}"
    retry_after = _retry_after_s(reply.headers.get(b"retry-after", b"").decode("latin-1"))
    if status == 429:
        raise RateLimitedError(message, retry_after)
    if status == 408 or status >= 500:
        # A 503 says when it will serve again (RFC 9110): the quick backoff spent every try
        # of a question within seconds of an overload or a restart announced for a minute.
        raise RetryableError(message, retry_after)
    if 300 <= status < 400:
        raise FatalModelError(f"HTTP {status}: redirect refused (endpoints must answer directly)")
    raise FatalModelError(message)


def _text(reply: Reply) -> str:
    try:
        return reply.body.decode(_charset(reply.headers), errors="replace")
    except (LookupError, UnicodeError):
        # A codec that is no charset ("hex", "idna") raised past the status: a 429 so labelled
        # was never retried, its question failed with the codec's complaint instead.
        return reply.body.decode("utf-8", errors="replace")


def _charset(headers: dict[bytes, bytes]) -> str:
    found = _CHARSET.search(headers.get(b"content-type", b"").decode("latin-1"))
    if found:
        try:
            return codecs.lookup(found.group(1)).name
        except LookupError:
            pass
    return "utf-8"


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
    except (TypeError, ValueError, OverflowError):  # a year of eleven digits overflows
        return None
    return max(0.0, when.timestamp() - time.time())
