"""Request plumbing: the runtime, bearer-token authentication, and a unit of work per call."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Annotated, Any

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from benchgen.core.context import Context, Principal
from benchgen.core.errors import Unauthenticated, invalid
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


async def checked_input(request: Request, _: PrincipalDep) -> None:
    """Refuse, after authentication and before any query, input no database can hold: the NUL
    character (PostgreSQL text cannot store it) and NaN or infinite numbers in a JSON body.

    Raises:
        InvalidInput: the first such value, with its place.
    """
    for name, value in request.path_params.items():
        _check(value, ["path", name])
    for name, value in request.query_params.multi_items():
        _check(name, ["query", name])
        _check(value, ["query", name])
    raw = await request.body()  # already read and kept by the framework
    if raw:
        try:
            body = json.loads(raw)
        except ValueError:
            return  # not JSON: the framework refuses it with its own 422
        try:
            _check(body, ["body"])
        except RecursionError:
            raise invalid(["body"], "nested too deeply") from None


def _check(value: Any, loc: list[str | int]) -> None:
    if isinstance(value, str) and "\x00" in value:
        raise invalid(loc, "must not contain the NUL character (\\u0000)")
    if isinstance(value, float) and not math.isfinite(value):
        raise invalid(loc, "must be a finite number")
    if isinstance(value, dict):
        for key, item in value.items():
            _check(key, [*loc, key])
            _check(item, [*loc, key])
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _check(item, [*loc, index])


def unit_of_work(
    runtime: RuntimeDep,
    principal: PrincipalDep,
    _: Annotated[None, Depends(checked_input)],
) -> Iterator[Context]:
    """One transaction per request as the authenticated principal; errors roll it back."""
    with transaction(runtime, principal) as ctx:
        yield ctx


ContextDep = Annotated[Context, Depends(unit_of_work)]
