"""Whole numbers in competition.yaml that Python or the database cannot hold are refused at
their place and line, never an uncaught error."""

from __future__ import annotations

import pytest
import yaml

from benchgen.bundles.competition import parse_competition_with_lines
from benchgen.core.errors import InvalidInput
from tests.bundle_factory import competition


def _problems(text: str) -> list[dict[str, object]]:
    with pytest.raises(InvalidInput) as caught:
        parse_competition_with_lines(text)
    return caught.value.errors


def test_an_integer_past_pythons_digit_limit_is_refused_at_its_place() -> None:
    text = yaml.safe_dump(competition()).replace(
        "max_submissions: 5", "max_submissions: " + "9" * 5000
    )
    [problem] = _problems(text)
    assert problem["loc"] == ["phases", 0, "max_submissions"]
    assert problem["msg"] == "expected a whole number"
    assert isinstance(problem["line"], int)


def test_an_index_listed_past_pythons_digit_limit_is_refused_at_its_place() -> None:
    comp = competition()
    comp["phases"][0]["tasks"] = [0, 777]
    text = yaml.safe_dump(comp).replace("- 777\n", "- " + "9" * 5000 + "\n", 1)
    [problem] = _problems(text)
    assert problem["loc"] == ["phases", 0, "tasks", 1]


@pytest.mark.parametrize(
    ("path", "loc"),
    [
        (("tasks", 0, "index"), ["tasks", 0, "index"]),
        (("phases", 0, "max_submissions"), ["phases", 0, "max_submissions"]),
        (("phases", 0, "execution_time_limit"), ["phases", 0, "execution_time_limit"]),
    ],
)
def test_whole_numbers_past_32_bits_are_refused(
    path: tuple[str, int, str], loc: list[object]
) -> None:
    comp = competition()
    comp[path[0]][path[1]][path[2]] = 10**200
    problems = _problems(yaml.safe_dump(comp))
    assert {"loc": loc, "msg": "must be 2147483647 or less"} in [
        {"loc": p["loc"], "msg": p["msg"]} for p in problems
    ]


def test_the_largest_32_bit_index_is_kept() -> None:
    comp = competition()
    comp["tasks"][0]["index"] = 2**31 - 1
    comp["phases"][0]["tasks"] = [2**31 - 1]
    comp["solutions"][0]["tasks"] = [2**31 - 1]
    spec, _ = parse_competition_with_lines(yaml.safe_dump(comp))
    assert spec.tasks[0].index == 2**31 - 1
