"""Request plumbing: the runtime, bearer-token authentication, and a unit of work per call."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from benchgen.core.context import Context, Principal
from benchgen.core.errors import Unauthenticated
from benchgen.services import tokens
from benchgen.services.runtime import Runtime, transaction

# Authentication itself may only read tokens and stamp last-used: it acts as a system
# principal with no grants, so it can never pass an access check.
_AUTHENTICATOR = Principal.system("authenticator", frozenset())
_bearer = HTTPBearer(auto_error=False, description="A personal API token: bgp_…")


def get_runtime(request: Request) -> Runtime:
    """The runtime the app was built with."""
    runtime: Runtime = request.app.state.runtime
    return runtime


RuntimeDep = Annotated[Runtime, Depends(get_runtime)]


def get_principal(
    runtime: RuntimeDep,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> Principal:
    """The principal behind the request's bearer token (personal `bgp_` tokens only)."""
    if credentials is None:
        raise Unauthenticated("Send a personal API token as 'Authorization: Bearer bgp_…'.")
    with transaction(runtime, _AUTHENTICATOR) as ctx:
        return tokens.authenticate_token(ctx, credentials.credentials)


PrincipalDep = Annotated[Principal, Depends(get_principal)]


def unit_of_work(runtime: RuntimeDep, principal: PrincipalDep) -> Iterator[Context]:
    """One transaction per request as the authenticated principal; errors roll it back."""
    with transaction(runtime, principal) as ctx:
        yield ctx


ContextDep = Annotated[Context, Depends(unit_of_work)]
