"""Request plumbing: the runtime, bearer-token authentication, and a unit of work per call."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from benchgen.core.context import Context, Principal
from benchgen.core.errors import Unauthenticated, invalid
from benchgen.core.storable import require_storable
from benchgen.services.accounts import tokens
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
    """The principal behind the request's bearer token (personal `bgp_` tokens only).

    Authentication only reads, so on SQLite a GET never waits for the write lock; the token's
    last-used time is refreshed in a write of its own at most once a minute. Nothing is cached:
    a revoked token or a disabled account is refused on the very next request.
    """
    if credentials is None:
        raise Unauthenticated("Send a personal API token as 'Authorization: Bearer bgp_…'.")
    with transaction(runtime, _AUTHENTICATOR, write=False) as ctx:
        principal = tokens.authenticate_token(ctx, credentials.credentials)
        due = tokens.use_is_due(ctx, principal)
    if due:
        with transaction(runtime, _AUTHENTICATOR) as ctx:
            tokens.record_use(ctx, principal)
    return principal


PrincipalDep = Annotated[Principal, Depends(get_principal)]


async def checked_input(request: Request, _: PrincipalDep) -> None:
    """Refuse, after authentication and before any query, input no database can hold: the NUL
    character (PostgreSQL text cannot store it) and NaN or infinite numbers in a JSON body.

    Raises:
        InvalidInput: the first such value, with its place.
    """
    for name, value in request.path_params.items():
        require_storable(value, ["path", name])
    for name, value in request.query_params.multi_items():
        require_storable(name, ["query", name])
        require_storable(value, ["query", name])
    if request.headers.get("content-type", "").startswith("multipart/form-data"):
        # The framework parsed the form from the stream and kept no raw body; the parsed form
        # is kept instead. Field values and file names are stored (kinds, bundle file names).
        form = await request.form()
        for name, value in form.multi_items():
            text = value if isinstance(value, str) else value.filename or ""
            require_storable(text, ["body", name])
        return
    raw = await request.body()  # already read and kept by the framework
    if raw:
        try:
            body = json.loads(raw)
            require_storable(body, ["body"])
        except ValueError:
            return  # not JSON: the framework refuses it with its own 422
        except RecursionError:
            # Routes without a body field never had the framework parse it, so decoding can
            # meet a deeply nested body here first.
            raise invalid(["body"], "nested too deeply") from None


def unit_of_work(
    request: Request,
    runtime: RuntimeDep,
    principal: PrincipalDep,
    _: Annotated[None, Depends(checked_input)],
) -> Iterator[Context]:
    """One transaction per request as the authenticated principal; errors roll it back.

    Reads take no write lock: on SQLite a write transaction serialises every request behind it.
    """
    write = request.method not in ("GET", "HEAD")
    with transaction(runtime, principal, write=write) as ctx:
        yield ctx


# scope="function" commits when the endpoint returns, before the response is sent. The default
# ("request") commits after the client already holds the answer, so its next request could miss
# what this one wrote (PostgreSQL reads only committed rows), and a failed commit would follow a
# success the client had already been told about.
ContextDep = Annotated[Context, Depends(unit_of_work, scope="function")]
