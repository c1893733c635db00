"""The CLI's Rich console: on a pipe or in a file, as wide as its widest row."""

from __future__ import annotations

import os

from rich.console import Console, ConsoleDimensions

# Wider than any row: output that is not a terminal is never wrapped to fit.
UNBOUNDED = 1_000_000


class PipeWideConsole(Console):
    """A console whose output to a pipe or a file is not wrapped: Rich gives such output 80
    columns (or the width of a terminal on another stream), and a table sent to `| cat`, `grep`
    or a file came out wrapped mid-cell. `COLUMNS`, where set, still decides."""

    @property
    def size(self) -> ConsoleDimensions:
        measured = super().size
        if self.is_terminal or "COLUMNS" in os.environ:
            return measured
        return ConsoleDimensions(UNBOUNDED, measured.height)

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        self.width, self.height = new_size
