"""Connect-time egress guard: resolve once, check those addresses, connect only to them."""

from __future__ import annotations

import asyncio
import os
import socket
import ssl
from collections.abc import Callable, Coroutine
from itertools import chain, zip_longest
from typing import Any

from benchgen.evals import netguard
from benchgen.evals.types import FatalModelError

# RFC 8305's head start for one address before the next is tried alongside it, as asyncio's own
# connector does: a black-holed IPv6 route costs a quarter second, not the timeout.
_HEAD_START_S = 0.25

Streams = tuple[asyncio.StreamReader, asyncio.StreamWriter]
Connect = Callable[[str], Coroutine[Any, Any, Streams]]


class ConnectFailed(OSError):
    """No connection: the name does not resolve, or no address accepted."""


def trusted_tls() -> ssl.SSLContext:
    """The certificate store for https endpoints: certifi's CAs, or the operator's own where
    `SSL_CERT_FILE` or `SSL_CERT_DIR` names them (a model server behind a private CA)."""
    if os.environ.get("SSL_CERT_FILE") or os.environ.get("SSL_CERT_DIR"):
        return ssl.create_default_context()  # reads those two, as OpenSSL does
    import certifi  # only for https endpoints: local runs never load the store

    return ssl.create_default_context(cafile=certifi.where())


async def open_guarded(
    host: str, port: int, allowlist: frozenset[str], tls: ssl.SSLContext | None
) -> Streams:
    """A connection to a checked address of `host`; TLS (when `tls` is given) still speaks to
    the name, so the certificate is verified for it and SNI carries it.

    The name is resolved here, once per new connection, every address is checked with
    netguard's rules and `allowlist` (a `netguard.normalized` one), and the socket is opened to
    a checked address; the caller bounds the time it may take.

    Raises:
        FatalModelError: `host` resolves to an internal address the allow-list does not open.
        ConnectFailed: the name does not resolve or no address accepts.
        ssl.SSLError: the TLS handshake failed (a certificate that does not match, say).
    """
    targets = await _targets(host, port, allowlist)

    async def connect(target: str) -> Streams:
        return await asyncio.open_connection(
            target, port, ssl=tls, server_hostname=host if tls else None
        )

    return await _first_connected(targets, connect)


async def _targets(host: str, port: int, allowed: frozenset[str]) -> list[str]:
    """The addresses to try, in order, once each has passed the check."""
    literal = netguard.parse_address(host)
    targets = [host] if literal is not None else await _resolve(host, port)
    if not netguard.is_allowed(host, port, allowed):
        parsed = (netguard.parse_address(target) for target in targets)
        addresses = [address for address in parsed if address is not None]
        try:
            netguard.check_addresses(host, port, addresses, allowed)
        except FatalModelError as exc:
            raise FatalModelError(f"connection refused: {exc}") from None
    return targets


async def _resolve(host: str, port: int) -> list[str]:
    try:
        loop = asyncio.get_running_loop()
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:  # gaierror is an OSError; bad IDNA a UnicodeError
        raise ConnectFailed(f"host {host!r} does not resolve") from exc
    # Only a Python built without IPv6 answers anything but addresses; nothing connects there.
    texts = (str(info[4][0]) for info in infos)
    found = [text for text in texts if netguard.parse_address(text) is not None]
    if not found:
        raise ConnectFailed(f"host {host!r} has no address")
    return _interleaved(list(dict.fromkeys(found)))


def _interleaved(targets: list[str]) -> list[str]:
    """Alternate IPv6 and IPv4 (RFC 8305), starting with the family the resolver put first."""
    first_v6 = ":" in targets[0]
    same = [target for target in targets if (":" in target) == first_v6]
    other = [target for target in targets if (":" in target) != first_v6]
    pairs = zip_longest(same, other)
    return [target for target in chain.from_iterable(pairs) if target is not None]


async def _first_connected(targets: list[str], connect: Connect) -> Streams:
    """Happy Eyeballs in brief: each address gets a head start, the first connection wins."""
    if len(targets) == 1:
        return await connect(targets[0])
    attempts: list[asyncio.Task[Streams]] = []
    winner = None
    try:
        for target in targets:
            attempts.append(asyncio.create_task(connect(target)))
            winner = await _first_success(attempts, _HEAD_START_S)
            if winner is not None:
                return winner.result()
        while not all(attempt.done() for attempt in attempts):
            winner = await _first_success(attempts, None)
            if winner is not None:
                return winner.result()
        raise ConnectFailed("; ".join(str(attempt.exception()) for attempt in attempts))
    finally:
        await _close_others(attempts, winner)


async def _first_success(
    attempts: list[asyncio.Task[Streams]], wait_s: float | None
) -> asyncio.Task[Streams] | None:
    """The first attempt that connected, after waiting up to `wait_s` for one to finish."""
    pending = [attempt for attempt in attempts if not attempt.done()]
    if pending:
        await asyncio.wait(pending, timeout=wait_s, return_when=asyncio.FIRST_COMPLETED)
    done = (attempt for attempt in attempts if attempt.done() and not attempt.cancelled())
    return next((attempt for attempt in done if attempt.exception() is None), None)


async def _close_others(
    attempts: list[asyncio.Task[Streams]], winner: asyncio.Task[Streams] | None
) -> None:
    """Stop the attempts still going; close any that connected but lost (two may succeed)."""
    losers = [attempt for attempt in attempts if attempt is not winner]
    for attempt in losers:
        attempt.cancel()
    if losers:
        await asyncio.wait(losers)  # raises nothing of theirs
    for attempt in losers:
        if not attempt.cancelled() and attempt.exception() is None:
            attempt.result()[1].close()
