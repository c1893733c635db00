"""JSON request bodies read strictly: an object that names a key twice is refused (422)."""

from __future__ import annotations

import json
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import Request, Response
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException

Handler = Callable[[Request], Coroutine[Any, Any, Response]]


class DuplicateKey(ValueError):
    """A JSON object gave one key more than once."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


class StrictJsonRequest(Request):
    """A request whose JSON body refuses repeated keys. `json.loads` keeps the last value of a
    repeated key and drops the others without a word, so `{"max_credits": 10, …,
    "max_credits": null}` from a template merge would run uncapped; uploads refuse the same."""

    async def json(self) -> Any:
        """The body as JSON, parsed once (the framework asks for it again after us)."""
        if not hasattr(self, "_json"):
            self._json = json.loads(await self.body(), object_pairs_hook=_unique)
        return self._json


def refusing_duplicate_keys(handler: Handler) -> Handler:
    """`handler` reading its JSON body strictly, a repeated key refused at `["body", key]`."""

    async def strict(request: Request) -> Response:
        try:
            return await handler(StrictJsonRequest(request.scope, request.receive))
        except HTTPException as problem:
            # The framework turns any failure to parse the body into a bare 400 "error parsing
            # the body", chained to its cause: say which key it was instead.
            cause = problem.__cause__
            if not isinstance(cause, DuplicateKey):
                raise
            error = {
                "type": "duplicate_key",
                "loc": ("body", cause.key),
                "msg": "given more than once in one object; send each field once",
            }
            raise RequestValidationError([error]) from None

    return strict


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise DuplicateKey(key)
        found[key] = value
    return found
