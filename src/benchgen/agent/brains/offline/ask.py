"""One request of the offline planner as it goes (what the tools answered so far this turn) and
what each of its steps returns: more tool calls, or the reply."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from benchgen.core.config import Settings

Call = tuple[str, dict[str, Any]]
Step = str | list[Call]


@dataclass
class Ask:
    """One request and what the tools have answered so far this turn."""

    text: str
    settings: Settings
    history: list[tuple[str, str]] = field(default_factory=list)
    results: list[tuple[str, Any]] = field(default_factory=list)

    def result(self, tool: str) -> Any:
        """The latest result of `tool` this turn, or None when it was not called yet."""
        for name, content in reversed(self.results):
            if name == tool:
                return content
        return None
