"""YAML merge keys (`<<: *defaults`), which Codabench's loader resolves, are resolved here too:
a phase built from shared defaults is that phase, not "a phase needs at least one task" plus a
warning that `<<` is an unknown key. A merge of anything but mappings is refused at its line."""

from __future__ import annotations

import pytest
import yaml

from benchgen.bundles.competition import parse_competition
from benchgen.core.errors import InvalidInput

REST = """tasks:
  - index: 0
    scoring_program: scoring_program
leaderboards:
  - key: main
    columns:
      - key: acc
"""

MERGED = """version: 2
title: T
fact_sheet: &phase
  tasks: [0]
  max_submissions: 3
  name: Base
phases:
  - <<: *phase
    index: 0
    name: Dev
  - <<: [*phase, {name: Other, description: Second}]
    index: 1
"""


def test_merged_phases_take_the_shared_keys_and_override_them() -> None:
    spec = parse_competition(MERGED + REST)
    dev, final = spec.phases
    assert (dev.name, dev.tasks, dev.max_submissions) == ("Dev", (0,), 3)
    # Of several merged mappings the later one wins, as with PyYAML (Codabench's loader).
    assert (final.name, final.description, final.tasks) == ("Other", "Second", (0,))
    assert yaml.safe_load(MERGED)["phases"][1]["name"] == "Other"
    assert spec.warnings == ()
    assert spec.extra == {"fact_sheet": {"tasks": [0], "max_submissions": 3, "name": "Base"}}


def test_a_key_written_twice_beside_a_merge_is_still_warned_about() -> None:
    text = MERGED.replace("    name: Dev\n", "    name: Dev\n    name: Again\n") + REST
    spec = parse_competition(text)
    assert spec.phases[0].name == "Again"
    [warning] = spec.warnings
    assert (warning.loc, warning.line) == (("phases", 0, "name"), 11)


def test_a_merge_of_a_list_of_numbers_is_refused_at_its_line() -> None:
    text = "version: 2\ntitle: T\nphases:\n  - index: 0\n    <<: [1, 2]\n    tasks: [0]\n"
    with pytest.raises(InvalidInput) as caught:
        parse_competition(text + REST)
    assert caught.value.errors == [
        {
            "loc": ["phases", 0],
            "line": 5,
            "msg": "a merge ('<<') must name a mapping or a list of mappings",
        }
    ]
