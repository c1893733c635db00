"""The names a route reads from each place of a request (path, query, header)."""

from __future__ import annotations

from collections.abc import Iterator
from types import UnionType
from typing import Any, Union, get_args, get_origin

from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute


def names_in(route: APIRoute, place: str) -> set[str]:
    """The names `route` and its dependencies read from `place` ("path", "query", "header")."""
    return {param.alias for param in _params(route.dependant, place)}


def repeatable_in(route: APIRoute, place: str) -> set[str]:
    """The names `route` reads from `place` as a list (`?tag=a&tag=b`)."""
    found = _params(route.dependant, place)
    return {param.alias for param in found if _takes_several(param.field_info.annotation)}


def _params(dependant: Dependant, place: str) -> Iterator[Any]:
    yield from getattr(dependant, f"{place}_params")
    for sub in dependant.dependencies:
        yield from _params(sub, place)


def _takes_several(annotation: Any) -> bool:
    """Whether a parameter typed `annotation` takes a list of values (`list[str] | None`)."""
    origin = get_origin(annotation)
    if origin in (Union, UnionType):
        return any(_takes_several(arg) for arg in get_args(annotation))
    return origin in (list, set, tuple, frozenset)
