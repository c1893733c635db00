"""The CLI's Rich console: on a pipe or in a file, as wide as its widest row; never a terminal
control that came in a text."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

from rich.console import Console, ConsoleDimensions
from rich.segment import Segment

# Wider than any row: output that is not a terminal is never wrapped to fit.
UNBOUNDED = 1_000_000
# C0 controls but tab and line feed, DEL and C1 controls: what a terminal acts on rather than
# shows (ESC starts colours, cursor moves, a new window title, a write to the clipboard).
CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


class PipeWideConsole(Console):
    """A console whose output to a pipe or a file is not wrapped: Rich gives such output 80
    columns (or the width of a terminal on another stream), and a table sent to `| cat`, `grep`
    or a file came out wrapped mid-cell. `COLUMNS`, where set, still decides.

    Controls in the text printed are shown by their code (\\x1b): a server's answers to `--url`
    are printed as they came, and a title or a message holding them recoloured, retitled or
    cleared the terminal. Rich's own controls (a progress bar's cursor moves) are kept."""

    @property
    def size(self) -> ConsoleDimensions:
        measured = super().size
        if self.is_terminal or "COLUMNS" in os.environ:
            return measured
        return ConsoleDimensions(UNBOUNDED, measured.height)

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        self.width, self.height = new_size

    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        return super()._render_buffer(
            segment if segment.control else segment._replace(text=shown(segment.text))
            for segment in buffer
        )


def shown(text: str) -> str:
    """`text` with each terminal control written as its code."""
    return CONTROLS.sub(lambda found: f"\\x{ord(found.group()):02x}", text)
