"""Connect-time egress guard: resolve once, check those addresses, connect only to them."""

from __future__ import annotations

import socket
import ssl
from collections.abc import Awaitable, Callable, Iterable
from functools import partial
from itertools import chain, zip_longest

import anyio
import httpcore
import httpx

from benchgen.evals import netguard
from benchgen.evals.types import FatalModelError

# RFC 8305's head start for one address before the next is tried alongside it, as httpx's own
# connector (anyio) does: a black-holed IPv6 route costs a quarter second, not the timeout.
_HEAD_START_S = 0.25

Connect = Callable[[str], Awaitable[httpcore.AsyncNetworkStream]]


class GuardedBackend(httpcore.AsyncNetworkBackend):
    """An httpcore network backend that refuses internal addresses at connect time.

    The name is resolved here, once per new connection (as before), every address is checked
    with netguard's rules, and the socket is opened to a checked address. httpcore still speaks
    TLS and HTTP for the name it asked for, so the certificate is verified for the name, SNI
    carries it and the Host header is unchanged.
    """

    def __init__(self, allowlist: frozenset[str]) -> None:
        self._allowed = netguard.normalized(allowlist)
        self._inner = httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        """Open a connection to a checked address of `host`.

        Raises:
            FatalModelError: `host` resolves to an internal address the allow-list does not open.
            httpcore.ConnectError: the name does not resolve or no address accepts.
            httpcore.ConnectTimeout: resolving and connecting took longer than `timeout`.
        """
        connect = partial(
            self._inner.connect_tcp,
            port=port,
            local_address=local_address,
            socket_options=socket_options,
        )
        try:
            # One deadline for resolving and connecting, as httpx's own connector has.
            with anyio.fail_after(timeout):
                return await _first_connected(await self._targets(host, port), connect)
        except TimeoutError:
            raise httpcore.ConnectTimeout(f"connecting to {host} took too long") from None

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        """Never used: model endpoints are URLs.

        Raises:
            FatalModelError: always.
        """
        raise FatalModelError("model endpoints cannot be Unix sockets")

    async def sleep(self, seconds: float) -> None:
        """httpcore's pause between connection retries."""
        await self._inner.sleep(seconds)

    async def _targets(self, host: str, port: int) -> list[str]:
        """The addresses to try, in order, once each has passed the check."""
        literal = netguard.parse_address(host)
        targets = [host] if literal is not None else await _resolve(host, port)
        if not netguard.is_allowed(host, port, self._allowed):
            parsed = (netguard.parse_address(target) for target in targets)
            addresses = [address for address in parsed if address is not None]
            try:
                netguard.check_addresses(host, port, addresses, self._allowed)
            except FatalModelError as exc:
                raise FatalModelError(f"connection refused: {exc}") from None
        return targets


async def _resolve(host: str, port: int) -> list[str]:
    try:
        infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:  # gaierror is an OSError; bad IDNA a UnicodeError
        raise httpcore.ConnectError(f"host {host!r} does not resolve") from exc
    # Only a Python built without IPv6 answers anything but addresses; nothing connects there.
    texts = (str(info[4][0]) for info in infos)
    found = [text for text in texts if netguard.parse_address(text) is not None]
    if not found:
        raise httpcore.ConnectError(f"host {host!r} has no address")
    return _interleaved(list(dict.fromkeys(found)))


def _interleaved(targets: list[str]) -> list[str]:
    """Alternate IPv6 and IPv4 (RFC 8305), starting with the family the resolver put first."""
    first_v6 = ":" in targets[0]
    same = [target for target in targets if (":" in target) == first_v6]
    other = [target for target in targets if (":" in target) != first_v6]
    pairs = zip_longest(same, other)
    return [target for target in chain.from_iterable(pairs) if target is not None]


async def _first_connected(targets: list[str], connect: Connect) -> httpcore.AsyncNetworkStream:
    """Happy Eyeballs in brief: each address gets a head start, the first connection wins."""
    if len(targets) == 1:
        return await connect(targets[0])
    won: list[httpcore.AsyncNetworkStream] = []
    failures: list[Exception] = []

    async def attempt(target: str, ended: anyio.Event) -> None:
        try:
            won.append(await connect(target))
            group.cancel_scope.cancel()
        except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
            failures.append(exc)
        finally:
            ended.set()

    try:
        async with anyio.create_task_group() as group:
            for target in targets:
                ended = anyio.Event()
                group.start_soon(attempt, target, ended)
                with anyio.move_on_after(_HEAD_START_S):
                    await ended.wait()
    except BaseException:
        await _close_all(won)
        raise
    if not won:
        raise httpcore.ConnectError("; ".join(str(failure) for failure in failures))
    await _close_all(won[1:])  # two attempts may succeed before the cancellation lands
    return won[0]


async def _close_all(streams: list[httpcore.AsyncNetworkStream]) -> None:
    with anyio.CancelScope(shield=True):
        for stream in streams:
            await stream.aclose()


def guarded_transport(
    allowlist: frozenset[str], tls: ssl.SSLContext, limits: httpx.Limits
) -> httpx.AsyncHTTPTransport:
    """httpx's transport, connecting through a `GuardedBackend`.

    httpx offers no parameter for a network backend, so its connection pool is rebuilt with
    one; tests/evals/test_egress.py fails if this stops taking effect.
    """
    transport = httpx.AsyncHTTPTransport(verify=tls, limits=limits, trust_env=False)
    transport._pool = httpcore.AsyncConnectionPool(
        ssl_context=tls,
        max_connections=limits.max_connections,
        max_keepalive_connections=limits.max_keepalive_connections,
        keepalive_expiry=limits.keepalive_expiry,
        network_backend=GuardedBackend(allowlist),
    )
    return transport
