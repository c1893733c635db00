"""Settings for a command: read from `BENCHGEN_*` variables, a wrong one told in one line."""

from __future__ import annotations

from typing import Any, get_args

import typer
from pydantic import ValidationError
from pydantic_core import ErrorDetails

from benchgen.core.config import Settings

# Exit status of a command refused for its configuration (usage errors are 2 in Click too).
BAD_SETTINGS = 2
# The message lands in terminals and logs, and a text setting may hold a credential (a key, a
# URL with a password): only numbers and switches, which cannot, are echoed back.
_ECHOED_TYPES = (int, float, bool)
_LONGEST_ECHO = 60
_MESSAGES = {
    "greater_than_equal": "must be at least {ge}",
    "greater_than": "must be more than {gt}",
    "less_than_equal": "must be at most {le}",
    "less_than": "must be less than {lt}",
    "int_parsing": "must be a whole number",
    "int_from_float": "must be a whole number",
    "float_parsing": "must be a number",
    "bool_parsing": "must be true or false",
}


def load_settings() -> Settings:
    """The deployment's settings; on a wrong value, one line per variable and exit status 2."""
    try:
        return Settings()
    except ValidationError as exc:
        for line in describe(exc):
            typer.echo(line, err=True)  # plain echo: Rich would wrap a long line in two
        raise typer.Exit(BAD_SETTINGS) from None


def describe(exc: ValidationError) -> list[str]:
    """One line per wrong setting: `BENCHGEN_NAME: the problem (got 'value')`."""
    return [_line(error) for error in exc.errors()]


def _line(error: ErrorDetails) -> str:
    field = str(error["loc"][0]) if error["loc"] else ""
    variable = f"BENCHGEN_{field.upper()}" if field else "BENCHGEN settings"
    template = _MESSAGES.get(error["type"])
    problem = template.format(**error.get("ctx", {})) if template else _plain(error["msg"])
    return f"{variable}: {problem}{_echo(field, error.get('input'))}"


def _plain(message: str) -> str:
    # Pydantic says "Input should be …"; the variable is the input the operator knows. Our own
    # checks' messages come as "Value error, …".
    message = message.removeprefix("Value error, ")
    return message.replace("Input should", "must", 1) if message.startswith("Input") else message


def _echo(field: str, value: Any) -> str:
    declared = Settings.model_fields.get(field)
    if declared is None or not isinstance(value, str):
        return ""
    kinds = get_args(declared.annotation) or (declared.annotation,)  # `int | None` → both
    if not all(_is_echoed(kind) for kind in kinds):
        return ""
    shown = value if len(value) <= _LONGEST_ECHO else value[:_LONGEST_ECHO] + "…"
    return f" (got {shown!r})"


def _is_echoed(kind: Any) -> bool:
    return kind is type(None) or kind in _ECHOED_TYPES
