"""Values no database keeps faithfully: NUL characters, lone surrogates and NaN or infinite
numbers."""

from __future__ import annotations

import math
from typing import Any

from benchgen.core.errors import invalid


def require_storable(value: Any, loc: list[str | int]) -> None:
    """Refuse the first unstorable value inside `value` (PostgreSQL text cannot hold NUL; JSON
    has no NaN), naming its place.

    Raises:
        InvalidInput: the first such value, with its `loc`.
    """
    if isinstance(value, str) and "\x00" in value:
        raise invalid(loc, "must not contain the NUL character (\\u0000)")
    if isinstance(value, float) and not math.isfinite(value):
        raise invalid(loc, "must be a finite number")
    if isinstance(value, dict):
        for key, item in value.items():
            require_storable(key, [*loc, key])
            require_storable(item, [*loc, key])
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            require_storable(item, [*loc, index])


def storable_text(text: str) -> str:
    """`text` as every database keeps it, for words nobody can be asked to retype (a model's
    reply): NUL and lone surrogates become U+FFFD, and a surrogate pair the character it
    stands for."""
    whole = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return whole.replace("\x00", "\ufffd")
