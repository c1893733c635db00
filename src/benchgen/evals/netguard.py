"""Refuse model endpoints on the platform's own network (loopback, private, link-local…)."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable
from urllib.parse import urlsplit

from benchgen.evals.types import FatalModelError

_DEFAULT_PORTS = {"http": 80, "https": 443}
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


def check_endpoint(url: str, allowlist: frozenset[str]) -> None:
    """Refuse a URL whose host is not a public internet address, unless the operator allowed it.

    Every address the name resolves to is checked, since a client may connect to any of them.
    This check, at registration, cannot pin the address: a name may re-resolve differently
    later (DNS rebinding). So the adapters check again, with `check_addresses`, the addresses
    each connection actually goes to (adapters/egress.py), and never follow redirects.

    Args:
        url: the endpoint, e.g. "https://api.example.com/v1".
        allowlist: host names, addresses or "host:port" entries the operator opened
            ("[v6]:port" for IPv6 with a port); compared case-insensitively.

    Raises:
        FatalModelError: the URL is not printable ASCII without spaces, the scheme is not
            http/https, the URL has no host, holds credentials or has a bad port, the name
            does not resolve, or an address is loopback, private, link-local, multicast,
            reserved, unspecified or otherwise not globally routable.
    """
    url = url.strip()
    if not url.isascii() or not url.isprintable() or " " in url:
        # A request line and a Host header carry only printable ASCII: such an address would
        # pass here and fail every request later, after connecting.
        raise FatalModelError(
            "endpoint URL must be printable ASCII without spaces: percent-encode other "
            "characters (ü is %C3%BC) and give an international host name in its xn-- form"
        )
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS:
        raise FatalModelError(f"endpoint scheme must be http or https, not {scheme or 'none'!r}")
    host = (parts.hostname or "").rstrip(".")
    if not host:
        raise FatalModelError("endpoint URL has no host")
    if "@" in parts.netloc:
        # The address is shown back (a platform model's to everyone) and audited: a password
        # in it would be readable by all of them. Keys have a field of their own, encrypted.
        raise FatalModelError(
            "endpoint URL must not hold a user name or password; give the key as the API key"
        )
    try:
        port = parts.port or _DEFAULT_PORTS[scheme]
    except ValueError as exc:
        raise FatalModelError("endpoint URL has an invalid port") from exc
    allowed = normalized(allowlist)
    if is_allowed(host, port, allowed):
        return
    check_addresses(host, port, _resolve(host, port), allowed)


def normalized(allowlist: frozenset[str]) -> frozenset[str]:
    """The allow-list as `is_allowed` and `check_addresses` compare it: trimmed, lower case."""
    return frozenset(entry.strip().lower() for entry in allowlist)


def is_allowed(host: str, port: int, allowed: frozenset[str]) -> bool:
    """Whether a normalized allow-list opens `host` (a name or an address) on `port`."""
    host = host.rstrip(".").lower()
    bracketed = f"[{host}]" if ":" in host else host
    return bool({host, bracketed, f"{bracketed}:{port}"} & allowed)


def check_addresses(
    host: str, port: int, addresses: Iterable[IPAddress], allowed: frozenset[str]
) -> None:
    """Refuse when any address `host` resolved to is internal and not itself allow-listed.

    Args:
        host: the name the addresses came from (named in the message).
        port: the port to connect to; allow-list entries may name one.
        addresses: every address the name resolved to.
        allowed: a `normalized` allow-list.

    Raises:
        FatalModelError: an address is loopback, private, link-local, multicast, reserved,
            unspecified or otherwise not globally routable, and the allow-list does not open it.
    """
    for address in addresses:
        if _is_internal(address) and not is_allowed(str(address), port, allowed):
            raise FatalModelError(
                f"endpoint host {host!r} resolves to {address}, a non-public address; "
                "an operator can allow it with the endpoint allow-list"
            )


def parse_address(text: str) -> IPAddress | None:
    """The address written in `text` ("10.0.0.1", "fe80::1%eth0"), or None for a host name."""
    try:
        # An IPv6 scope ("%eth0") names an interface; the address alone decides its class.
        return ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        return None


def _resolve(host: str, port: int) -> list[IPAddress]:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise FatalModelError(f"endpoint host {host!r} does not resolve") from exc
    # Only a Python built without IPv6 answers anything but addresses; nothing connects there.
    addresses = (parse_address(str(info[4][0])) for info in infos)
    return [address for address in addresses if address is not None]


def _is_internal(address: IPAddress) -> bool:
    # ::ffff:10.0.0.1 and 6to4's 2002:0a00:0001:: carry an IPv4 address the packets can reach:
    # judge that address.
    if isinstance(address, ipaddress.IPv6Address):
        # fec0::/10 was IPv6's private range (deprecated, still routed inside some networks):
        # Python counts it neither private nor non-global.
        if address.is_site_local:
            return True
        embedded = address.ipv4_mapped or address.sixtofour
        if embedded is not None:
            address = embedded
    return (
        address.is_loopback
        or address.is_private
        or address.is_link_local
        or address.is_multicast
        or address.is_reserved
        or address.is_unspecified
        # Catches what the flags above miss, e.g. carrier-grade NAT 100.64.0.0/10, which cloud
        # providers use for internal services.
        or not address.is_global
    )
