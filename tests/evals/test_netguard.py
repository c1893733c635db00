"""Endpoint checks: only public http(s) hosts, unless the operator's allow-list opens one."""

from __future__ import annotations

import socket
from typing import Any

import pytest

from benchgen.evals.netguard import check_endpoint
from benchgen.evals.types import FatalModelError

NONE: frozenset[str] = frozenset()


@pytest.mark.parametrize(
    "url",
    [
        "https://8.8.8.8/v1",
        "http://1.1.1.1:8080/v1",
        "https://[2606:4700:4700::1111]/v1",
        "HTTPS://93.184.216.34",
    ],
)
def test_public_addresses_pass(url: str) -> None:
    check_endpoint(url, NONE)


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8000/v1",
        "http://127.1.2.3/",
        "http://localhost:8000/v1",
        "http://10.0.0.1/",
        "http://172.16.5.4/",
        "http://192.168.1.1/",
        "http://169.254.169.254/latest/meta-data",  # cloud metadata
        "http://0.0.0.0:8000/",
        "http://224.0.0.1/",
        "http://240.0.0.1/",
        "http://255.255.255.255/",
        "http://100.64.0.1/",  # carrier-grade NAT
        "http://[::1]:8000/",
        "http://[::]/",
        "http://[fe80::1]/",
        "http://[fc00::1]/",
        "http://[ff02::1]/",
        "http://[::ffff:127.0.0.1]/",
        "http://[::ffff:10.0.0.1]/",
        "http://[2002:a00:1::]/",  # 6to4 wrapping 10.0.0.1
        "http://2130706433/",  # 127.0.0.1 written as one number
        "http://0x7f.1/",
    ],
)
def test_internal_addresses_are_refused(url: str) -> None:
    with pytest.raises(FatalModelError, match="non-public"):
        check_endpoint(url, NONE)


@pytest.mark.parametrize(
    "url", ["ftp://8.8.8.8/", "file:///etc/passwd", "gopher://8.8.8.8", "8.8.8.8:80", ""]
)
def test_only_http_and_https(url: str) -> None:
    with pytest.raises(FatalModelError, match="scheme"):
        check_endpoint(url, NONE)


@pytest.mark.parametrize("url", ["http://", "http://:80/", "http://8.8.8.8:99999/"])
def test_malformed_urls_are_refused(url: str) -> None:
    with pytest.raises(FatalModelError, match=r"host|port"):
        check_endpoint(url, NONE)


@pytest.mark.parametrize(
    "url",
    [
        "https://user:sk-secret@8.8.8.8/v1",
        "https://sk-secret@api.example.com/v1",
        "http://:pw@8.8.8.8/",
    ],
)
def test_credentials_in_the_address_are_refused(url: str) -> None:
    """The address is shown back (a platform model's to every user) and written to the audit
    log: a password in it was readable by all of them."""
    with pytest.raises(FatalModelError, match="user name or password") as refused:
        check_endpoint(url, NONE)
    assert "sk-secret" not in str(refused.value)


@pytest.mark.parametrize(
    ("url", "allowlist"),
    [
        ("http://localhost:8000/v1", {"localhost"}),
        ("http://LOCALHOST:8000/v1", {"localhost:8000"}),
        ("http://127.0.0.1:8000/v1", {"127.0.0.1:8000"}),
        ("http://127.0.0.1/v1", {"127.0.0.1"}),
        ("http://localhost:9000/v1", {"127.0.0.1"}),  # by the address it resolves to
        ("http://[::1]:8080/", {"[::1]:8080"}),
        ("http://[::1]:8080/", {"::1"}),
    ],
)
def test_the_allowlist_opens_hosts(url: str, allowlist: set[str]) -> None:
    check_endpoint(url, frozenset(allowlist))


@pytest.mark.parametrize(
    ("url", "allowlist"),
    [
        ("http://127.0.0.1:9000/v1", {"127.0.0.1:8000"}),
        ("http://10.0.0.2/", {"10.0.0.1"}),
        ("http://localhost/", {"localhost:8000"}),
    ],
)
def test_the_allowlist_opens_nothing_else(url: str, allowlist: set[str]) -> None:
    with pytest.raises(FatalModelError):
        check_endpoint(url, frozenset(allowlist))


def test_every_resolved_address_is_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    def two_addresses(host: str, port: int, **kwargs: Any) -> list[Any]:
        stream = socket.SOCK_STREAM
        return [
            (socket.AF_INET, stream, 6, "", ("93.184.216.34", port)),
            (socket.AF_INET, stream, 6, "", ("10.1.2.3", port)),
        ]

    monkeypatch.setattr(socket, "getaddrinfo", two_addresses)
    with pytest.raises(FatalModelError, match=r"10\.1\.2\.3"):
        check_endpoint("https://rebind.example/v1", NONE)
    check_endpoint("https://rebind.example/v1", frozenset({"rebind.example"}))


def test_an_unresolvable_name_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_such_host(*args: Any, **kwargs: Any) -> list[Any]:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", no_such_host)
    with pytest.raises(FatalModelError, match="does not resolve"):
        check_endpoint("https://nowhere.invalid/", NONE)
