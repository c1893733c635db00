"""The names a route reads from each place of a request (path, query, header)."""

from __future__ import annotations

from collections.abc import Iterator
from types import UnionType
from typing import Any, Union, get_args, get_origin

from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute

# Found once per operation (its path and methods: routes themselves are unhashable): every API
# request checks its query against them, and walking the dependencies cost ~0.1 ms each time.
_FOUND: dict[tuple[str, frozenset[str], str], tuple[frozenset[str], frozenset[str]]] = {}


def names_in(route: APIRoute, place: str) -> frozenset[str]:
    """The names `route` and its dependencies read from `place` ("path", "query", "header")."""
    return _names(route, place)[0]


def repeatable_in(route: APIRoute, place: str) -> frozenset[str]:
    """The names `route` reads from `place` as a list (`?tag=a&tag=b`)."""
    return _names(route, place)[1]


def _names(route: APIRoute, place: str) -> tuple[frozenset[str], frozenset[str]]:
    key = (route.path_format, frozenset(route.methods or ()), place)
    if key not in _FOUND:
        params = list(_params(route.dependant, place))
        several = [p for p in params if _takes_several(p.field_info.annotation)]
        _FOUND[key] = (frozenset(p.alias for p in params), frozenset(p.alias for p in several))
    return _FOUND[key]


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
