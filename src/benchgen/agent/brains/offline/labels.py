"""How the offline planner names a benchmark or a model in a list or on a choice button: its
name and id, cut short so that a label read back as a request keeps its id."""

from __future__ import annotations

import re
from typing import Any

MAX_OPTIONS = 10
MAX_LABEL_NAME = 60
# "show benchmark Sums", "the quiz called Sums": words around a name that are not the name.
_CALLED = re.compile(
    r"^(?:(?:the|my)\s+)?(?:benchmark|quiz)\s+(?:(?:called|named|titled)\s+)?", re.I
)


def named(model: dict[str, Any]) -> str:
    return _labelled(model["name"], model["id"])


def titled(benchmark: dict[str, Any]) -> str:
    """A benchmark's title and id, as a button or a list shows it."""
    return _labelled(benchmark["title"], benchmark["id"])


def _labelled(name: str, id_: str) -> str:
    """A name and its id for a button; long names are cut so the label (at most 200 characters,
    and read back as the next request) keeps its ids."""
    if name == id_:
        return id_
    short = name if len(name) <= MAX_LABEL_NAME else name[: MAX_LABEL_NAME - 1] + "…"
    return f"{short} ({id_})"


def no_single(phrase: str, benchmarks: list[dict[str, Any]]) -> str:
    """The opening of a question offering benchmarks when `phrase` named none or several of
    them ("" without a phrase). "benchmark Sums" is quoted as "Sums", unless some title holds
    the word itself."""
    said = phrase.strip()
    if not any(_CALLED.match(b["title"] + " ") for b in benchmarks):
        said = _CALLED.sub("", said) or said
    return f'I found no single benchmark called "{said}". ' if said else ""
