"""API routes whose sync endpoint runs together with its unit of work in one worker thread."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import Depends, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.dependencies.models import Dependant
from fastapi.dependencies.utils import get_typed_return_annotation, get_typed_signature
from fastapi.exceptions import RequestValidationError, ResponseValidationError
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException

from benchgen.api.deps import ContextDep, Work, WorkDep, get_principal, pending_work, require_token
from benchgen.api.form_bodies import form_shape, refusing_unknown_fields
from benchgen.api.json_bodies import refusing_duplicate_keys

# The parameter that replaces the endpoint's `ContextDep` one; a name no endpoint uses.
_WORK = "pending_unit_of_work"


class OneThreadRoute(APIRoute):
    """A route that opens a sync endpoint's unit of work in the endpoint's own thread.

    As a dependency with `yield`, the unit of work cost four hops between the event loop and
    the thread pool per request: to open it, to run the endpoint, to validate the answer and
    to commit; a fifth of a GET's CPU (py-spy). Here the endpoint becomes a coroutine that
    gathers the unit of work's inputs on the event loop and makes one hop, in which the
    transaction opens, the endpoint runs, its answer is checked against the response model
    and the transaction commits (before the response is sent) or rolls back (on any error,
    an answer that fails its model included). Endpoints stay plain functions taking a
    `ContextDep`.
    """

    def __init__(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
        shape = form_shape(endpoint)
        if shape.fields:  # a form's unknown or repeated fields refused, as a JSON body's are
            strict = Depends(refusing_unknown_fields(shape))
            kwargs["dependencies"] = [*(kwargs.get("dependencies") or ()), strict]
        super().__init__(path, in_one_thread(endpoint, self.checked), **kwargs)

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        """The framework's handler, reading JSON bodies strictly (json_bodies); for a route that
        needs a token, one that refuses a request without a valid token (401) before it
        explains what is wrong with its input (422)."""
        handler = super().get_route_handler()
        if not _authenticates(self.dependant):
            return refusing_duplicate_keys(handler)

        async def token_first(request: Request) -> Response:
            try:
                return await handler(request)
            except (RequestValidationError, HTTPException) as problem:
                # The framework checks the body, query and form before any dependency runs,
                # and the unit of work authenticates only in the endpoint's thread. Checking
                # the token here, in a read of its own and only for a refused request, keeps
                # the input's schema from anyone without a valid token at no cost to the rest.
                if isinstance(problem, RequestValidationError) or problem.status_code == 400:
                    await require_token(request)
                raise

        return refusing_duplicate_keys(token_first)

    def checked(self, answer: Any) -> None:
        """Refuse an answer its response model would refuse, while its work can still be rolled
        back (the framework checks it again, after the commit, as it serialises it).

        Raises:
            ResponseValidationError: the answer does not fit (a bug: the client gets a 500).
        """
        field = self.response_field
        if field is None or isinstance(answer, Response):
            return
        _, errors = field.validate(answer, {}, loc=("response",))
        if errors:
            raise ResponseValidationError(errors, body=answer)


def _authenticates(dependant: Dependant) -> bool:
    """Whether the route, through any of its dependencies, needs a valid token."""
    return any(
        sub.call in (get_principal, pending_work) or _authenticates(sub)
        for sub in dependant.dependencies
    )


def in_one_thread(
    endpoint: Callable[..., Any], checked: Callable[[Any], None]
) -> Callable[..., Any]:
    """`endpoint` as a coroutine that runs it, and `checked` on its answer, inside its unit of
    work in one thread; an endpoint without a `ContextDep` parameter as it is.

    Raises:
        TypeError: a coroutine endpoint with a `ContextDep`: its services would block the event
            loop, and every other request with it.
    """
    signature = get_typed_signature(endpoint)
    name = next((p.name for p in signature.parameters.values() if p.annotation == ContextDep), None)
    if name is None:
        return endpoint
    if inspect.iscoroutinefunction(endpoint):
        raise TypeError(f"{endpoint.__qualname__}: an endpoint with a ContextDep must be sync")
    kept = [p for p in signature.parameters.values() if p.name != name]
    work = inspect.Parameter(_WORK, inspect.Parameter.KEYWORD_ONLY, annotation=WorkDep)

    async def run(**values: Any) -> Any:
        pending: Work = values.pop(_WORK)
        return await run_in_threadpool(_run, endpoint, checked, name, pending, values)

    # Named and documented as the endpoint (operation ids, OpenAPI summaries), but without
    # `__wrapped__`: FastAPI would unwrap it and take the coroutine for a sync function.
    for attribute in ("__module__", "__name__", "__qualname__", "__doc__"):
        setattr(run, attribute, getattr(endpoint, attribute))
    run.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[*kept, work], return_annotation=get_typed_return_annotation(endpoint)
    )
    return run


def _run(
    endpoint: Callable[..., Any],
    checked: Callable[[Any], None],
    name: str,
    pending: Work,
    values: dict[str, Any],
) -> Any:
    with pending.opened() as ctx:
        answer = endpoint(**values, **{name: ctx})
        checked(answer)
    return answer
