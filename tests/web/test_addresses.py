"""The client address sign-in throttling counts: X-Forwarded-For only from trusted proxies."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from starlette.requests import Request

from benchgen.web.addresses import client_address


def _request(peer: str, forwarded: str | None, trusted: str) -> Request:
    settings = SimpleNamespace(trusted_proxies=trusted)
    app: Any = SimpleNamespace(state=SimpleNamespace(runtime=SimpleNamespace(settings=settings)))
    headers = [(b"x-forwarded-for", forwarded.encode())] if forwarded is not None else []
    scope = {"type": "http", "client": (peer, 1234), "headers": headers, "app": app}
    return Request(scope)


@pytest.mark.parametrize(
    ("peer", "forwarded", "trusted", "expected"),
    [
        ("203.0.113.9", "1.2.3.4", "", "203.0.113.9"),  # nobody trusted: the header is ignored
        ("203.0.113.9", "1.2.3.4", "10.0.0.1", "203.0.113.9"),  # not from our proxy
        ("10.0.0.1", "1.2.3.4", "10.0.0.1", "1.2.3.4"),
        # A client forging the header's left part: the right-most untrusted hop counts.
        ("10.0.0.1", "6.6.6.6, 1.2.3.4", "10.0.0.1", "1.2.3.4"),
        ("10.0.0.1", "1.2.3.4, 10.0.0.2", "10.0.0.1,10.0.0.2", "1.2.3.4"),
        ("10.0.0.1", None, "10.0.0.1", "10.0.0.1"),
    ],
)
def test_forwarded_for_is_believed_only_from_trusted_proxies(
    peer: str, forwarded: str | None, trusted: str, expected: str
) -> None:
    assert client_address(_request(peer, forwarded, trusted)) == expected
