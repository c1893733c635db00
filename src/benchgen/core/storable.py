"""Values no database keeps faithfully: NUL characters, lone surrogates and NaN or infinite
numbers."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from benchgen.core.errors import invalid

# Bodies a web framework parses into form fields (and then keeps no raw bytes of).
FORM_TYPES = ("multipart/form-data", "application/x-www-form-urlencoded")


def require_storable(value: Any, loc: list[str | int]) -> None:
    """Refuse the first unstorable value inside `value` (PostgreSQL text cannot hold NUL, no
    UTF-8 text a lone surrogate; JSON has no NaN), naming its place.

    Raises:
        InvalidInput: the first such value, with its `loc`.
    """
    if isinstance(value, str) and "\x00" in value:
        raise invalid(loc, "must not contain the NUL character (\\u0000)")
    if isinstance(value, str) and not _is_utf8(value):
        raise invalid(loc, "holds a lone surrogate escape (\\ud800 to \\udfff), which is no text")
    if isinstance(value, float) and not math.isfinite(value):
        raise invalid(loc, "must be a finite number")
    if isinstance(value, dict):
        for key, item in value.items():
            require_storable(key, [*loc, key])
            require_storable(item, [*loc, key])
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            require_storable(item, [*loc, index])


def _is_utf8(text: str) -> bool:
    # JSON's "\ud800" decodes to a lone surrogate, which no UTF-8 database or file can hold:
    # kept in free-form metadata, it was a 500 when the row was written.
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def require_storable_fields(where: str, fields: Iterable[tuple[str, Any]]) -> None:
    """Refuse the first unstorable name or value among a request's path parameters, query
    parameters or form fields (`where`: "path", "query", "body"); an uploaded file counts by
    its name.

    Raises:
        InvalidInput: the first such name or value, at `[where, name]`.
    """
    for name, value in fields:
        text = value if isinstance(value, str) else getattr(value, "filename", None) or ""
        require_storable(name, [where, name])
        require_storable(text, [where, name])


def storable_text(text: str) -> str:
    """`text` as every database keeps it, for words nobody can be asked to retype (a model's
    reply): NUL and lone surrogates become U+FFFD, and a surrogate pair the character it
    stands for."""
    whole = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return whole.replace("\x00", "\ufffd")
