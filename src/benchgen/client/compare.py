"""Calls that compare two runs of one benchmark question by question."""

from __future__ import annotations

from typing import cast

from benchgen.client.connection import Connection
from benchgen.client.shapes import Comparison


class CompareCalls(Connection):
    """Two finished runs side by side, with a significance test."""

    def compare_runs(self, a: str, b: str) -> Comparison:
        """Run `b` against run `a` on the questions both answered.

        Args:
            a: The reference run's id (`run_…`).
            b: The id of the run compared with it; the difference is b − a.

        Returns:
            Accuracies, the difference with a paired bootstrap 95% interval, the exact McNemar
            p-value and the counts (both right, both wrong, only a, only b); per-tag
            differences and the per-question table only for the benchmark's team (None for
            others).

        Raises:
            NotFound: Either run does not exist or you may not see it.
            InvalidInput: The runs are on different benchmarks or versions, one has not
                finished (completed or cancelled), or the benchmark is custom.
        """
        return cast(Comparison, self._json("GET", "/runs/compare", params={"a": a, "b": b}))
