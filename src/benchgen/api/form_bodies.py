"""Multipart form bodies read strictly: a field the route does not take, or one given twice, is
refused (422) before the endpoint runs, as JSON bodies refuse theirs."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from fastapi import Request, params
from fastapi.dependencies.utils import get_typed_signature
from fastapi.exceptions import RequestValidationError


@dataclass(frozen=True)
class FormShape:
    """The form fields and files a route takes, and which of them it requires."""

    fields: frozenset[str]
    required: frozenset[str]


def form_shape(endpoint: Callable[..., Any]) -> FormShape:
    """The form `endpoint` takes (no fields for a JSON route)."""
    fields, required = set(), set()
    for parameter in get_typed_signature(endpoint).parameters.values():
        declared = [*getattr(parameter.annotation, "__metadata__", ()), parameter.default]
        for form in (found for found in declared if isinstance(found, params.Form)):
            name = form.alias or parameter.name  # File is a Form too
            fields.add(name)
            given_default = parameter.default is not inspect.Parameter.empty
            if not given_default or (parameter.default is form and form.is_required()):
                required.add(name)
    return FormShape(frozenset(fields), frozenset(required))


def refusing_unknown_fields(shape: FormShape) -> Callable[[Request], Coroutine[Any, Any, None]]:
    """A dependency refusing a form that sends a field outside the route's or one field twice,
    each at `["body", name]`: the framework drops the first silently and keeps one value of the
    second, so a misspelt `fromat` would upload in the default format."""
    takes = ", ".join(sorted(shape.fields))

    async def strict_form(request: Request) -> None:
        # Parsed once already, under the framework's limits, before any dependency: this reads
        # the same parsed form back.
        form = await request.form()
        sent = dict.fromkeys(form.keys())
        problems = [
            _problem(name, f"not a field of this form; it takes {takes}")
            for name in sent
            if name not in shape.fields
        ]
        problems += [
            _problem(name, "given more than once; send each field once")
            for name in sorted(shape.fields)
            if len(form.getlist(name)) > 1
        ]
        # The framework takes an empty field for a missing one: "Field required" for a field
        # that was sent, empty.
        problems += [
            _problem(name, "must not be empty")
            for name in sorted(shape.required)
            if form.get(name) == ""
        ]
        if problems:
            # Raised before the framework checks the fields themselves: a misspelt required
            # field is told missing here too, as the framework would have told it.
            missing = sorted(shape.required - sent.keys())
            raise RequestValidationError(
                problems + [_problem(n, "Field required") for n in missing]
            )

    return strict_form


def _problem(name: str, message: str) -> dict[str, Any]:
    return {"type": "form_field", "loc": ("body", name), "msg": message}
