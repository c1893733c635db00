"""`benchgen serve` behind a TLS proxy on another machine: the proxy's X-Forwarded-Proto makes
cookies `Secure`, and only a configured proxy is believed."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from benchgen.services.runtime import Runtime
from tests.processes import Deployment

PROXY, STRANGER = "127.0.0.2", "127.0.0.3"  # loopback addresses: the whole 127/8 is this host


@pytest.fixture
def proxied(runtime: Runtime) -> Iterator[Deployment]:
    deployment = Deployment(runtime, BENCHGEN_TRUSTED_PROXIES=f" {PROXY} ,")
    try:
        deployment.serve()
        yield deployment
    finally:
        deployment.stop()


def _signin_cookie(deployment: Deployment, source: str) -> str:
    transport = httpx.HTTPTransport(local_address=source)
    headers = {"X-Forwarded-Proto": "https", "X-Forwarded-For": "203.0.113.7"}
    with httpx.Client(transport=transport, headers=headers) as client:
        answer = client.get(f"{deployment.url}/signin")
    assert answer.status_code == 200
    return answer.headers["set-cookie"]


@pytest.mark.parametrize("backend", ["sqlite"])
def test_cookies_are_secure_behind_a_configured_tls_proxy_only(proxied: Deployment) -> None:
    assert "secure" in _signin_cookie(proxied, PROXY).lower()
    # Anyone else sending the same header is not believed.
    assert "secure" not in _signin_cookie(proxied, STRANGER).lower()
