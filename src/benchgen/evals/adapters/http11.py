"""One HTTP/1.1 exchange on an asyncio connection, parsed by h11: a POST out, a reply read up
to a cap (content-length, chunked or close-delimited; gzip and deflate undone)."""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import h11

from benchgen.evals.types import FatalModelError, RetryableError

# Only an excerpt of an error body is ever shown; reading a little past it is enough.
ERROR_BODY_BYTES = 16 * 1024
_READ_BYTES = 64 * 1024
_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True)
class Origin:
    """Where one URL's requests go, and the head they share."""

    scheme: str
    host: str
    port: int
    target: str  # path and query
    headers: tuple[tuple[str, str], ...]


@dataclass
class Connection:
    """One kept-alive connection and h11's view of it."""

    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    protocol: h11.Connection
    idle_since: float = 0.0

    def close(self) -> None:
        # Abort: a reply left half-read is not drained, and TLS owes a closing peer nothing.
        self.writer.transport.abort()


@dataclass(frozen=True)
class Reply:
    """A reply as read: its status, headers (lower-case names) and body."""

    status: int
    headers: dict[bytes, bytes]
    body: bytes
    complete: bool  # False: the body went past the cap and the rest was not read


class Stale(Exception):
    """A kept-alive connection failed before any reply: the server had closed it."""


async def round_trip(
    connection: Connection, origin: Origin, body: bytes, cap: int, reused: bool
) -> Reply:
    """POST `body` and read the reply (a 2xx body up to `cap` bytes, an error body a little).

    Raises:
        Stale: a `reused` connection failed before any reply.
        OSError, h11.RemoteProtocolError: the connection failed or the reply is not HTTP.
        FatalModelError: the reply uses an encoding other than identity, gzip or deflate.
        RetryableError: a compressed reply that does not decompress.
    """
    protocol = connection.protocol
    head = h11.Request(
        method="POST",
        target=origin.target,
        headers=[*origin.headers, ("content-length", str(len(body)))],
    )
    # Head and body in one write: split writes cost a delayed-ACK round trip each.
    sent = protocol.send(head) + protocol.send(h11.Data(data=body))
    connection.writer.write(sent + protocol.send(h11.EndOfMessage()))
    try:
        await connection.writer.drain()
        response = await _response(connection)
    except (OSError, h11.RemoteProtocolError) as exc:
        if reused:
            raise Stale(str(exc)) from exc
        raise
    ok = 200 <= response.status_code < 300
    headers = {name: value for name, value in response.headers}
    data, complete = await _body(connection, headers, cap if ok else ERROR_BODY_BYTES, ok)
    return Reply(response.status_code, headers, data, complete)


async def _response(connection: Connection) -> h11.Response:
    """The reply's head (informational 1xx replies are skipped)."""
    while True:
        event = await _next_event(connection)
        if isinstance(event, h11.Response):
            return event
        if not isinstance(event, h11.InformationalResponse):
            raise h11.RemoteProtocolError(f"unexpected {type(event).__name__} before a reply")


async def _next_event(connection: Connection) -> Any:
    protocol = connection.protocol
    while True:
        event = protocol.next_event()
        if event is not h11.NEED_DATA:
            return event
        protocol.receive_data(await connection.reader.read(_READ_BYTES))


async def _body(
    connection: Connection, headers: dict[bytes, bytes], cap: int, whole: bool
) -> tuple[bytes, bool]:
    """The decoded body up to `cap` bytes, and whether that was all of it (past the cap,
    nothing more is read; the caller closes the connection). With `whole`, a compressed body
    must end where its compression says it does."""
    decode, ended = _decoder(headers.get(b"content-encoding", b"identity"))
    chunks: list[bytes] = []
    size = 0
    while True:
        event = await _next_event(connection)
        if isinstance(event, h11.EndOfMessage):
            if whole and not ended():
                # A body cut short (a close-delimited reply that lost its end) may still parse
                # as JSON: only the stream's end and its checksum tell that it is all there.
                raise RetryableError("reply could not be decoded: the compressed body ends early")
            return b"".join(chunks), True
        if not isinstance(event, h11.Data):
            raise h11.RemoteProtocolError(f"unexpected {type(event).__name__} in a reply body")
        data = decode(bytes(event.data), cap - size + 1)
        if size + len(data) > cap:
            chunks.append(data[: cap - size])
            return b"".join(chunks), False
        chunks.append(data)
        size += len(data)


def _decoder(encoding: bytes) -> tuple[Callable[[bytes, int], bytes], Callable[[], bool]]:
    """Bytes as sent -> bytes as meant, at most `limit` of them per call (no zip bombs), and
    whether the compressed stream has ended. We ask for identity; gzip and deflate are undone
    for servers that compress anyway."""
    name = encoding.strip().lower()
    if name in (b"", b"identity"):
        return _as_sent, _always
    if name not in (b"gzip", b"deflate"):
        raise FatalModelError(f"reply uses an unsupported encoding {name.decode(errors='replace')}")
    inflate = zlib.decompressobj(wbits=31 if name == b"gzip" else 15)

    def decode(data: bytes, limit: int) -> bytes:
        try:
            return inflate.decompress(data, limit)
        except zlib.error as exc:
            raise RetryableError(f"reply could not be decoded: {exc}") from None

    return decode, lambda: inflate.eof


def _as_sent(data: bytes, limit: int) -> bytes:
    return data


def _always() -> bool:
    return True


def parse_origin(url: str, extra: tuple[tuple[str, str], ...]) -> Origin:
    """Where `url` goes and the head of its requests, `extra` headers last.

    Raises:
        FatalModelError: not an http(s) URL with a host, a bad port, or characters a request
            line or Host header cannot carry (a space, non-ASCII).
    """
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in _PORTS or not parts.hostname:
        raise FatalModelError(f"endpoint must be an http(s) URL with a host, not {url!r}")
    try:
        port = parts.port or _PORTS[scheme]
    except ValueError:
        raise FatalModelError("endpoint URL has an invalid port") from None
    host = parts.hostname
    shown = f"[{host}]" if ":" in host else host
    authority = shown if port == _PORTS[scheme] else f"{shown}:{port}"
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    try:
        # Checked here, before connecting: h11 would refuse it on every request, with an error
        # the callers do not expect (an address saved before netguard checked its characters).
        h11.Request(method="POST", target=target, headers=[("host", authority)])
    except (h11.LocalProtocolError, UnicodeError) as exc:
        raise FatalModelError(f"the address cannot be sent: {type(exc).__name__}") from None
    headers = (
        ("host", authority),
        ("accept", "application/json"),
        ("accept-encoding", "identity"),
        ("content-type", "application/json"),
        ("user-agent", "benchgen"),
        *extra,
    )
    return Origin(scheme, host, port, target, headers)


def require_sendable(headers: tuple[tuple[str, str], ...]) -> None:
    """Refuse, once and up front, headers h11 would refuse on every request.

    Raises:
        FatalModelError: a value that cannot be sent (a line break in a key, say), named by its
            header alone: h11's message quotes the value, escaped, which no redaction of the
            key as stored would find.
    """
    for name, value in headers:
        try:
            h11.Connection(h11.CLIENT).send(
                h11.Request(method="POST", target="/", headers=[("host", "x"), (name, value)])
            )
        except (h11.LocalProtocolError, UnicodeError):
            raise FatalModelError(
                f"the {name} header cannot be sent: its value (the API key) holds a line break, "
                "a space at an end or a character outside ASCII"
            ) from None
