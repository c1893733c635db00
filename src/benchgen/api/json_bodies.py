"""JSON bodies and form fields read strictly: a key repeated at any depth is refused there."""

from __future__ import annotations

import json
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import Request, Response
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException

from benchgen.core.errors import invalid

Handler = Callable[[Request], Coroutine[Any, Any, Response]]
_REPEATED = "given more than once in one object; send each field once"
_DIGITS = "not valid JSON: a number has too many digits"


class DuplicateKey(ValueError):
    """A JSON object gave one key more than once; `loc` is that key's place in the document."""

    def __init__(self, loc: list[str | int]) -> None:
        super().__init__(loc)
        self.loc = loc


class TooManyDigits(ValueError):
    """A JSON integer longer than Python converts (json's one ValueError besides bad JSON and
    bytes that are not UTF-8)."""


class StrictJsonRequest(Request):
    """A request whose JSON body refuses repeated keys. `json.loads` keeps the last value of a
    repeated key and drops the others without a word, so `{"max_credits": 10, …,
    "max_credits": null}` from a template merge would run uncapped; uploads refuse the same."""

    async def json(self) -> Any:
        """The body as JSON, parsed once (the framework asks for it again after us)."""
        if not hasattr(self, "_json"):
            self._json = _loads(await self.body())
        return self._json


def refusing_duplicate_keys(handler: Handler) -> Handler:
    """`handler` reading its JSON body strictly, a repeated key refused at its place in the
    body (`["body", "questions", 0, "prompt"]`)."""

    async def strict(request: Request) -> Response:
        try:
            return await handler(StrictJsonRequest(request.scope, request.receive))
        except HTTPException as problem:
            # The framework turns any failure to parse the body into a bare 400 "error parsing
            # the body", chained to its cause: say what it was, and where, instead.
            cause = problem.__cause__
            if isinstance(cause, DuplicateKey):
                error = {"type": "duplicate_key", "loc": ("body", *cause.loc), "msg": _REPEATED}
            elif isinstance(cause, TooManyDigits):
                error = {"type": "too_many_digits", "loc": ("body",), "msg": _DIGITS}
            else:
                raise
            raise RequestValidationError([error]) from None

    return strict


def field_json(text: str, field: str) -> Any:
    """A form field's JSON text, read as strictly as a body.

    Raises:
        InvalidInput: at `field`: not JSON, nested deeper than the parser goes (a bare
            RecursionError was a 500), or a key given twice (the last would win unseen).
    """
    try:
        return _loads(text)
    except DuplicateKey as exc:
        raise invalid([field, *exc.loc], _REPEATED) from None
    except json.JSONDecodeError as exc:
        raise invalid([field], f"is not JSON ({exc.msg})") from None
    except TooManyDigits:
        raise invalid([field], "is not JSON (a number has too many digits)") from None
    except RecursionError:
        raise invalid([field], "nested too deeply") from None


def _loads(text: str | bytes) -> Any:
    """`text` as JSON.

    Raises:
        JSONDecodeError, UnicodeDecodeError: not JSON, or not UTF-8.
        TooManyDigits: an integer too long to convert.
        DuplicateKey: an object names a key twice, at the first such object's place.
    """
    repeated = False

    def unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        nonlocal repeated
        found: dict[str, Any] = {}
        for key, value in pairs:
            if key in found:
                # Kept, not raised: only the finished document says where this object is.
                repeated = True
                return _Repeated(found, key)
            found[key] = value
        return found

    try:
        parsed = json.loads(text, object_pairs_hook=unique)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise
    except ValueError as exc:
        raise TooManyDigits(str(exc)) from None
    if repeated:
        raise DuplicateKey(_first_repeat(parsed))
    return parsed


class _Repeated(dict[str, Any]):
    """An object that named `key` again: its keys up to there."""

    def __init__(self, found: dict[str, Any], key: str) -> None:
        super().__init__(found)
        self.key = key


def _first_repeat(document: Any) -> list[str | int]:
    """The place of the first repeated key in `document`, depth first in the text's order
    (without recursion: a document may be as deep as the parser allows)."""
    pending: list[tuple[list[str | int], Any]] = [([], document)]
    while pending:
        loc, value = pending.pop()
        if isinstance(value, _Repeated):
            return [*loc, value.key]
        inside: list[tuple[str | int, Any]] = []
        if isinstance(value, dict):
            inside = list(value.items())
        elif isinstance(value, list):
            inside = list(enumerate(value))
        pending.extend(([*loc, key], item) for key, item in reversed(inside))
    return []
