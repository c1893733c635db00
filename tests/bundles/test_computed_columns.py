"""A computed leaderboard column combines scored columns only: one over another computed column
was worked out in file order, leaving that part (or, in a cycle, both columns) out unseen."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from benchgen.bundles.competition import parse_competition
from benchgen.core.errors import InvalidInput
from tests.bundle_factory import competition


def _board(columns: list[dict[str, Any]]) -> str:
    board = {"index": 0, "key": "main", "title": "Results", "columns": columns}
    return yaml.safe_dump(competition(leaderboards=[board]), sort_keys=False)


def _computed(index: int, key: str, parts: list[int]) -> dict[str, Any]:
    return {"index": index, "key": key, "computation": "avg", "computation_indexes": parts}


CHAIN = [_computed(0, "overall", [1, 2]), _computed(1, "part", [2, 3])]
CYCLE = [_computed(0, "x", [1, 2]), _computed(1, "y", [0, 3])]


@pytest.mark.parametrize("computed", [CHAIN, CYCLE], ids=["chain", "cycle"])
def test_a_computation_over_a_computed_column_is_refused_at_its_place(
    computed: list[dict[str, Any]],
) -> None:
    text = _board([*computed, {"index": 2, "key": "a"}, {"index": 3, "key": "b"}])
    with pytest.raises(InvalidInput) as caught:
        parse_competition(text)
    first = caught.value.errors[0]
    assert first["loc"] == ["leaderboards", 0, "columns", 0, "computation_indexes", 0]
    assert "column 1 is itself computed" in first["msg"] and first["line"]


def test_computations_over_scored_columns_still_parse() -> None:
    columns = [_computed(0, "overall", [1, 2]), {"index": 1, "key": "a"}, {"index": 2, "key": "b"}]
    board = parse_competition(_board(columns)).leaderboards[0]
    assert board.columns[0].computation_indexes == (1, 2)
