"""What the pages' Chart.js charts share: axis labels short enough to be drawn whole."""

from __future__ import annotations

import textwrap

# Chart.js never shortens an axis label: one wider than the axis's share of the canvas (half of
# a narrow grid column, or a phone's width) is cut off at the edge, rank and all. So labels go
# on short lines, at most three.
LABEL_LINE = 14
LABEL_LINES = 3


def chart_label(text: str) -> list[str]:
    """`text` as the lines of one Chart.js axis label, short enough not to be cut off."""
    return textwrap.wrap(text, LABEL_LINE, max_lines=LABEL_LINES, placeholder="…") or [""]
