"""The names a route reads from each place of a request (path, query, header)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from fastapi.dependencies.models import Dependant
from fastapi.dependencies.utils import field_annotation_is_sequence
from fastapi.routing import APIRoute


def names_in(route: APIRoute, place: str) -> set[str]:
    """The names `route` and its dependencies read from `place` ("path", "query", "header")."""
    return {param.alias for param in _params(route.dependant, place)}


def repeatable_in(route: APIRoute, place: str) -> set[str]:
    """The names `route` reads from `place` as a list (`?tag=a&tag=b`)."""
    found = _params(route.dependant, place)
    return {
        param.alias for param in found if field_annotation_is_sequence(param.field_info.annotation)
    }


def _params(dependant: Dependant, place: str) -> Iterator[Any]:
    yield from getattr(dependant, f"{place}_params")
    for sub in dependant.dependencies:
        yield from _params(sub, place)
