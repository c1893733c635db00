"""Sending one signed webhook request, without permission checks: for the notification service,
which decided to send it. The connection goes through the model adapters' connect-time egress
guard; no redirect is followed and the reply's body is never read."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import ssl
from dataclasses import dataclass
from urllib.parse import urlsplit

import h11

from benchgen.evals import netguard
from benchgen.evals.adapters.egress import open_guarded, trusted_tls
from benchgen.evals.adapters.http11 import parse_origin
from benchgen.evals.types import FatalModelError

TIMEOUT_S = 5.0
HIDDEN = "[hidden]"  # the webhook's address or host, in what a failure says
# Only the status line and headers are read, in small pieces: h11 refuses a head larger than
# its own limit (16 KiB), so a hostile receiver cannot make the worker hold much.
_READ_BYTES = 1024


@dataclass(frozen=True)
class Webhook:
    """One request, as it goes out: the address, the exact body and its signature headers."""

    url: str
    body: bytes
    headers: tuple[tuple[str, str], ...]


def signature(secret: str, timestamp: str, body: bytes) -> str:
    """`sha256=` and the hex HMAC-SHA256 of `timestamp + "." + body` under `secret`."""
    signed = timestamp.encode() + b"." + body
    return "sha256=" + hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()


@dataclass(frozen=True)
class Sent:
    """How one request went: the reply's status (None without a reply), "" or why it failed,
    and whether sending it again later may go better (no reply, a 5xx, 408 or 429)."""

    status: int | None
    error: str
    transient: bool = False


# Statuses a receiver gives for a passing trouble: it asks to be tried again later.
_TRY_LATER = frozenset({408, 425, 429})


def send(
    webhook: Webhook,
    allowlist: frozenset[str],
    timeout_s: float = TIMEOUT_S,
    tls: ssl.SSLContext | None = None,
) -> Sent:
    """POST once and say how it went ("HTTP 500", a refused address, a timeout). Never raises.

    A refused or unsendable address, a redirect and any other 4xx are final: sent again, the
    same request would meet the same answer."""
    try:
        status = asyncio.run(_post(webhook, netguard.normalized(allowlist), timeout_s, tls))
    except FatalModelError as exc:  # a bad or unsendable URL, or an address the guard refused
        return Sent(None, _without_address(str(exc), webhook.url))
    except TimeoutError:
        return Sent(None, f"no reply within {timeout_s:g} s", transient=True)
    except (OSError, h11.ProtocolError) as exc:  # ssl.SSLError is an OSError
        return Sent(None, f"connection failed: {type(exc).__name__}", transient=True)
    except ValueError as exc:
        # parse_origin refuses what h11 cannot send; ssl still refuses some names as a value
        # (a server name with a leading dot), and a delivery must never raise.
        return Sent(None, f"the address cannot be sent: {type(exc).__name__}")
    if 200 <= status < 300:
        return Sent(status, "")
    if 300 <= status < 400:
        return Sent(status, f"HTTP {status}: redirect not followed")
    return Sent(status, f"HTTP {status}", transient=status >= 500 or status in _TRY_LATER)


async def _post(
    webhook: Webhook, allowed: frozenset[str], timeout_s: float, tls: ssl.SSLContext | None
) -> int:
    origin = parse_origin(webhook.url, webhook.headers)
    async with asyncio.timeout(timeout_s):
        context = None
        if origin.scheme == "https":
            context = tls or trusted_tls()
        # Resolved and checked here, at connect time: a name that now points inside is refused
        # even if it pointed outside when the user saved it.
        reader, writer = await open_guarded(origin.host, origin.port, allowed, context)
        try:
            protocol = h11.Connection(h11.CLIENT)
            length = ("content-length", str(len(webhook.body)))
            head = h11.Request(
                method="POST", target=origin.target, headers=[*origin.headers, length]
            )
            data = protocol.send(head) + protocol.send(h11.Data(data=webhook.body))
            writer.write(data + protocol.send(h11.EndOfMessage()))
            await writer.drain()
            return await _status(reader, protocol)
        finally:
            # Abort without reading on: the body is not wanted, and nothing of it is kept.
            writer.transport.abort()


async def _status(reader: asyncio.StreamReader, protocol: h11.Connection) -> int:
    while True:
        event = protocol.next_event()
        if event is h11.NEED_DATA:
            chunk = await reader.read(_READ_BYTES)
            protocol.receive_data(chunk)
            continue
        if isinstance(event, h11.Response):
            return int(event.status_code)
        if not isinstance(event, h11.InformationalResponse):
            raise h11.RemoteProtocolError(f"unexpected {type(event).__name__} before a reply")


def _without_address(reason: str, url: str) -> str:
    """`reason` with the webhook's address and host left out: it goes to the run's log, which
    the benchmark's owner and collaborators read too, and the address is the launcher's own."""
    try:
        host = urlsplit(url).hostname or url
    except ValueError:
        host = url
    return reason.replace(repr(url), HIDDEN).replace(repr(host), HIDDEN)
