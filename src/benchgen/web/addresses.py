"""The client's address, believing X-Forwarded-For only from configured proxies."""

from __future__ import annotations

from fastapi import Request


def client_address(request: Request) -> str:
    """The address sign-in throttling counts against.

    X-Forwarded-For is written by the client unless a proxy we trust replaced it, so it is read
    only when the connection itself comes from a configured proxy; then the right-most address
    that is not one of our proxies is the client (everything left of it may be forged).
    """
    peer = request.client.host if request.client else ""
    trusted = {
        entry.strip()
        for entry in request.app.state.runtime.settings.trusted_proxies.split(",")
        if entry.strip()
    }
    if peer not in trusted:
        return peer
    hops = [hop.strip() for hop in request.headers.get("x-forwarded-for", "").split(",")]
    for hop in reversed([hop for hop in hops if hop]):
        if hop not in trusted:
            return hop[:64]
    return peer
