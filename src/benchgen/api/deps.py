"""Request plumbing: the runtime, bearer-token authentication, and a unit of work per call."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, replace
from typing import Annotated

from fastapi import Depends, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.routing import APIRoute
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from benchgen.api.parameters import names_in, repeatable_in
from benchgen.core.context import Context, Principal
from benchgen.core.errors import InvalidInput, Unauthenticated, invalid
from benchgen.core.storable import FORM_TYPES, require_storable, require_storable_fields
from benchgen.services.accounts import tokens
from benchgen.services.runtime import Runtime, transaction

# Authentication itself may only read tokens and stamp last-used: it acts as a system
# principal with no grants, so it can never pass an access check.
_AUTHENTICATOR = Principal.system("authenticator", frozenset())
_bearer = HTTPBearer(auto_error=False, description="A personal API token: bgp_…")


async def get_runtime(request: Request) -> Runtime:
    """The runtime the app was built with (a coroutine: reading app state needs no thread)."""
    runtime: Runtime = request.app.state.runtime
    return runtime


RuntimeDep = Annotated[Runtime, Depends(get_runtime)]
CredentialsDep = Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]


def get_principal(runtime: RuntimeDep, credentials: CredentialsDep) -> Principal:
    """The principal behind the request's bearer token (personal `bgp_` tokens only), for
    routes that open their own transactions; the others authenticate in `unit_of_work`.

    Authentication only reads, so on SQLite a GET never waits for the write lock; the token's
    last-used time is refreshed in a write of its own at most once a minute. Nothing is cached:
    a revoked token or a disabled account is refused on the very next request.
    """
    with transaction(runtime, _AUTHENTICATOR, write=False) as ctx:
        principal = _authenticate(ctx, credentials)
        due = tokens.use_is_due(ctx, principal)
    if due:
        _record_use(runtime, principal)
    return principal


PrincipalDep = Annotated[Principal, Depends(get_principal)]


async def require_token(request: Request) -> None:
    """Refuse a request without a valid personal token, authenticating in a read of its own.

    Raises:
        Unauthenticated: no token, or a malformed, unknown, expired or revoked one.
    """
    credentials = await _bearer(request)
    await run_in_threadpool(get_principal, await get_runtime(request), credentials)


def _authenticate(ctx: Context, credentials: HTTPAuthorizationCredentials | None) -> Principal:
    if credentials is None:
        raise Unauthenticated("Send a personal API token as 'Authorization: Bearer bgp_…'.")
    return tokens.authenticate_token(ctx, credentials.credentials)


def _record_use(runtime: Runtime, principal: Principal) -> None:
    with transaction(runtime, _AUTHENTICATOR) as ctx:
        tokens.record_use(ctx, principal)


async def input_problem(request: Request) -> InvalidInput | None:
    """What `checked_input` would refuse, returned rather than raised, so that the unit of work
    can refuse it after authenticating (a caller without a valid token learns only that)."""
    try:
        await _check_input(request)
    except InvalidInput as problem:
        return problem
    return None


async def checked_input(request: Request, _: PrincipalDep) -> None:
    """Refuse, after authentication and before any query, input no database can hold: the NUL
    character (PostgreSQL text cannot store it) and NaN or infinite numbers in a JSON body.

    Raises:
        InvalidInput: the first such value, with its place.
    """
    await _check_input(request)


async def _check_input(request: Request) -> None:
    _require_known_query(request)
    await _require_no_stray_body(request)
    require_storable_fields("path", request.path_params.items())
    require_storable_fields("query", request.query_params.multi_items())
    if request.headers.get("content-type", "").startswith(FORM_TYPES):
        # The framework parsed the form from the stream and kept no raw body (reading it again
        # raised, a 500); the parsed form is kept instead. Field values and file names are
        # stored (kinds, bundle file names).
        require_storable_fields("body", (await request.form()).multi_items())
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


async def _require_no_stray_body(request: Request) -> None:
    """Refuse a body sent to an operation that reads none: never read, `{"max_credits": 5}`
    sent to a retry would launch it uncapped as if the cap had been taken. An empty JSON object
    or `null` (what many clients send by default) asks for nothing, and passes."""
    route = request.scope.get("route")
    if not isinstance(route, APIRoute) or route.body_field is not None:
        return
    body = await request.body()
    if body.strip() and _json_or_none(body) not in ({}, None):
        raise invalid(["body"], "this operation takes no body; send the request without one")


def _json_or_none(body: bytes) -> object:
    """The body as JSON, or a marker that it is none (not even `null`)."""
    try:
        return json.loads(body)
    except ValueError:
        return _NOT_JSON


_NOT_JSON = object()


def _require_known_query(request: Request) -> None:
    """Refuse a query parameter the route does not take, or one given twice that is not a list
    (`?tag=a&tag=b`): dropped or picked silently, a misspelt one (`?limt=5`, `?page=2`) would
    answer as if never sent (the first page again), and of two values one would be ignored."""
    route = request.scope.get("route")
    if not isinstance(route, APIRoute):
        return
    known, lists = names_in(route, "query"), repeatable_in(route, "query")
    sent = [name for name, _ in request.query_params.multi_items()]
    for name in sent:
        if name not in known:
            takes = f"it takes {', '.join(sorted(known))}" if known else "it takes none"
            raise invalid(["query", name], f"not a query parameter of this operation; {takes}")
        if sent.count(name) > 1 and name not in lists:
            raise invalid(["query", name], "given more than once; send it once")


@dataclass(frozen=True)
class Work:
    """What one request's unit of work needs, gathered without a worker thread: the runtime,
    the credentials sent, what `input_problem` found, and whether the request only reads."""

    runtime: Runtime
    credentials: HTTPAuthorizationCredentials | None
    problem: InvalidInput | None
    reads: bool

    @contextmanager
    def opened(self) -> Iterator[Context]:
        """One transaction as the authenticated principal; errors roll it back.

        Reads take no write lock (on SQLite a write transaction serialises every request
        behind it) and authenticate inside their own transaction: the token, the account and
        the work see one snapshot, and the rows authentication loaded serve every later
        decision. Writes authenticate first in a read of their own, so a request without a
        valid token never waits for, or holds, the write lock. Either way the token is looked
        up on every request: a revoked token or a disabled account is refused on the very
        next one.
        """
        if self.reads:
            yield from _reading(self.runtime, self.credentials, self.problem)
            return
        principal = get_principal(self.runtime, self.credentials)
        if self.problem is not None:
            raise self.problem
        with transaction(self.runtime, principal) as ctx:
            yield ctx

    def reading(self) -> AbstractContextManager[Context]:
        """A unit of work that only reads, as a GET's, for a request that writes later: its
        route checks first and then does slow work (a bundle's programs), which must not hold
        the write lock; it opens `opened` only to store the result."""
        return replace(self, reads=True).opened()


async def pending_work(
    request: Request,
    runtime: RuntimeDep,
    credentials: CredentialsDep,
    problem: Annotated[InvalidInput | None, Depends(input_problem)],
) -> Work:
    """The request's unit of work, not yet opened (a coroutine: it needs no thread)."""
    return Work(runtime, credentials, problem, request.method in ("GET", "HEAD"))


WorkDep = Annotated[Work, Depends(pending_work)]


def opened_by_route() -> Context:
    """Stands for the request's unit of work in `ContextDep`: `api.routing.OneThreadRoute`
    opens it in the endpoint's own thread instead. A route of another class reaches this.

    Raises:
        RuntimeError: always; the route's router needs `route_class=OneThreadRoute`.
    """
    raise RuntimeError("ContextDep needs a router made with route_class=OneThreadRoute")


def _reading(
    runtime: Runtime,
    credentials: HTTPAuthorizationCredentials | None,
    problem: InvalidInput | None,
) -> Iterator[Context]:
    principal, due = None, False
    try:
        with transaction(runtime, _AUTHENTICATOR, write=False) as ctx:
            principal = _authenticate(ctx, credentials)
            due = tokens.use_is_due(ctx, principal)
            if problem is not None:
                raise problem
            yield Context(ctx.session, principal, ctx.settings, ctx.clock)
    finally:
        # After the read has ended, never inside it: a reader waiting for a second connection
        # to stamp with could exhaust the pool while holding its first.
        if due and principal is not None:
            _record_use(runtime, principal)


# One transaction per request as its principal (`Work.opened`), committed in the endpoint's
# thread as it returns: before the response is sent, so the client's next request sees what
# this one wrote, and a failed commit is an error, never a success already reported.
ContextDep = Annotated[Context, Depends(opened_by_route)]
