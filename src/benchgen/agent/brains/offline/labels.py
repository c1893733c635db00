"""How the offline planner names a benchmark or a model in a list or on a choice button: its
name and id, cut short so that a label read back as a request keeps its id."""

from __future__ import annotations

from typing import Any

MAX_OPTIONS = 10
MAX_LABEL_NAME = 60


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
