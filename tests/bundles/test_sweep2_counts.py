"""A competition.yaml may not ask for tens of thousands of phases, tasks, pages or columns: each
becomes rows written in one transaction (30,000 phases held it for 14 s), a rendering or a
leaderboard cell per run. Past the bound, the list is refused at its line, with its count."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from benchgen.bundles.competition import (
    MAX_COLUMNS,
    MAX_PAGES,
    MAX_PHASES,
    MAX_TASKS,
    parse_competition,
)
from benchgen.core.errors import InvalidInput
from tests.bundle_factory import competition


def _phases(comp: dict[str, Any], count: int) -> list[Any]:
    comp["phases"] = [{"index": i, "tasks": [0]} for i in range(count)]
    return ["phases"]


def _tasks(comp: dict[str, Any], count: int) -> list[Any]:
    comp["tasks"] = [{"index": i, "scoring_program": "s/"} for i in range(count)]
    return ["tasks"]


def _pages(comp: dict[str, Any], count: int) -> list[Any]:
    comp["pages"] = [{"title": f"P{i}", "file": "p.md"} for i in range(count)]
    return ["pages"]


def _columns(comp: dict[str, Any], count: int) -> list[Any]:
    comp["leaderboards"][0]["columns"] = [{"index": i, "key": f"c{i}"} for i in range(count)]
    return ["leaderboards", 0, "columns"]


@pytest.mark.parametrize(
    ("fill", "most"),
    [(_phases, MAX_PHASES), (_tasks, MAX_TASKS), (_pages, MAX_PAGES), (_columns, MAX_COLUMNS)],
)
def test_a_list_past_its_bound_is_refused_with_its_count(fill: Any, most: int) -> None:
    comp = competition()
    fill(comp, most)
    parse_competition(yaml.safe_dump(comp, sort_keys=False))  # the bound itself is fine
    loc = fill(comp, most + 1)
    text = yaml.safe_dump(comp, sort_keys=False)
    with pytest.raises(InvalidInput) as caught:
        parse_competition(text)
    [error] = [e for e in caught.value.errors if e["loc"] == loc]
    assert error["msg"] == f"at most {most} are allowed (it has {most + 1})"
    assert isinstance(error["line"], int)
