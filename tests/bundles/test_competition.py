"""competition.yaml parsing: real spellings accepted, every problem given with loc and line."""

from __future__ import annotations

import json
import os
import subprocess
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from benchgen.bundles.competition import (
    ACCEPTED_TOP_LEVEL_KEYS,
    CompetitionSpec,
    parse_competition,
    parse_date,
)
from benchgen.bundles.schema import bundle_json_schema
from benchgen.core.errors import InvalidInput
from benchgen.core.text import MAX_TITLE
from benchgen.services.specs import BenchmarkIn, parse

BASE = """\
version: 2
title: Demo
description: A demo
docker_image: python:3.12
terms: pages/terms.md
pages:
  - title: Overview
    file: pages/overview.md
phases:
  - index: 0
    name: Dev
    start: 1-1-2026
    end: 12-31-2026
    max_submissions: 5
    tasks:
      - 0
tasks:
  - index: 0
    name: T0
    scoring_program: scoring_program/
    reference_data: reference_data/
leaderboards:
  - title: Results
    key: main
    columns:
      - title: Accuracy
        key: accuracy
        index: 0
"""
SECOND_TASK = "  - index: 1\n    name: T1\n    scoring_program: scoring_program/\n"
SECOND_COLUMN = "      - title: Time\n        key: time\n        index: 1\n"
# A git checkout (or bare mirror) of github.com/codalab/competition-examples, when one is at hand.
MIRROR = Path(os.environ.get("BENCHGEN_CODABENCH_EXAMPLES", "codalab-competition-examples"))
REAL_BUNDLES = [
    "codabench/Mini-MNIST/Mini-MNIST-Bundle/competition.yaml",
    "codabench/autowsl/code_submission/code_submission_bundle/competition.yaml",
    "codabench/wheat_seeds/results_submission_bundle/competition.yaml",
]


def line_of(text: str, needle: str, after: str = "") -> int:
    """1-based line of the first line holding `needle`, below the line that equals `after`."""
    lines = text.splitlines()
    start = lines.index(after) + 1 if after else 0
    return next(n for n, line in enumerate(lines[start:], start + 1) if needle in line)


def errors_of(text: str) -> list[dict[str, Any]]:
    with pytest.raises(InvalidInput) as caught:
        parse_competition(text)
    assert caught.value.message.startswith("competition.yaml has ")
    return caught.value.errors


def edit(old: str, new: str, text: str = BASE) -> str:
    assert old in text
    return text.replace(old, new, 1)


def test_base_bundle_parses() -> None:
    spec = parse_competition(BASE)
    assert spec.title == "Demo"
    assert spec.docker_image == "python:3.12"
    assert spec.terms == "pages/terms.md"
    assert [(p.title, p.path) for p in spec.pages] == [("Overview", "pages/overview.md")]
    phase = spec.phases[0]
    assert (phase.start, phase.end) == (
        datetime(2026, 1, 1, tzinfo=UTC),
        datetime(2026, 12, 31, tzinfo=UTC),
    )
    assert phase.tasks == (0,)
    assert phase.max_submissions == 5
    assert spec.tasks[0].scoring_program == "scoring_program"
    assert spec.tasks[0].reference_data == "reference_data"
    assert spec.leaderboards[0].columns[0].sorting == "desc"
    assert spec.warnings == ()


# (old, new, expected loc, the text on the expected line)
ERROR_CASES = [
    ("    tasks:\n      - 0\n", "    tasks: []\n", ["phases", 0, "tasks"], "tasks: []"),
    ("    tasks:\n      - 0\n", "", ["phases", 0, "tasks"], "phases: >> - index: 0"),
    ("title: Demo\n", "", ["title"], "version: 2"),
    ("version: 2", "version: 1", ["version"], "version: 1"),
    (
        "tasks:\n      - 0\ntasks:",
        "tasks:\n      - 0\ntasks: []\nold_tasks:",
        ["tasks"],
        "tasks: []",
    ),
    ("      - 0\n", "      - 7\n", ["phases", 0, "tasks", 0], "- 7"),
    ("    tasks:\n      - 0\n", "    tasks: 0\n", ["phases", 0, "tasks"], "tasks: 0"),
    (
        "    columns:\n      - title: Accuracy\n        key: accuracy\n        index: 0\n",
        "    columns: []\n",
        ["leaderboards", 0, "columns"],
        "columns: []",
    ),
    ("leaderboards:", "leaderboard: []\nleaderboards:", ["leaderboard"], "leaderboard: []"),
    (
        "    scoring_program: scoring_program/\n",
        "",
        ["tasks", 0, "scoring_program"],
        "tasks: >> - index: 0",
    ),
    (
        "scoring_program: scoring_program/",
        "scoring_program: ../outside",
        ["tasks", 0, "scoring_program"],
        "../outside",
    ),
    ("end: 12-31-2026", "end: 12-31-2025", ["phases", 0, "end"], "end: 12-31-2025"),
    ("start: 1-1-2026", "start: 2026-13-45", ["phases", 0, "start"], "start: 2026-13-45"),
    ("start: 1-1-2026", "start: next monday", ["phases", 0, "start"], "next monday"),
    (
        "max_submissions: 5",
        "max_submissions: -1",
        ["phases", 0, "max_submissions"],
        "max_submissions: -1",
    ),
    ("max_submissions: 5", "max_submissions: lots", ["phases", 0, "max_submissions"], "lots"),
    (
        "        index: 0\n",
        "        index: 0\n        sorting: up\n",
        ["leaderboards", 0, "columns", 0, "sorting"],
        "sorting: up",
    ),
    (
        "        index: 0\n",
        "        index: 0\n        computation: median\n        computation_indexes: [0]\n",
        ["leaderboards", 0, "columns", 0, "computation"],
        "median",
    ),
    (
        "        index: 0\n",
        "        index: 0\n"
        + SECOND_COLUMN
        + "        computation: avg\n        computation_indexes: [0, 5]\n",
        ["leaderboards", 0, "columns", 1, "computation_indexes", 1],
        "[0, 5]",
    ),
    (
        "        index: 0\n",
        "        index: 0\n" + SECOND_COLUMN.replace("index: 1", "index: 0"),
        ["leaderboards", 0, "columns", 1, "index"],
        "      - title: Time >> index: 0",
    ),
    (
        "        index: 0\n",
        "        index: 0\n" + SECOND_COLUMN.replace("key: time", "key: accuracy"),
        ["leaderboards", 0, "columns", 1, "key"],
        "      - title: Time >> key: accuracy",
    ),
    (
        "leaderboards:",
        "solutions:\n  - path: solution/\n    tasks: [0, 3]\nleaderboards:",
        ["solutions", 0, "tasks", 1],
        "tasks: [0, 3]",
    ),
    (
        "leaderboards:",
        SECOND_TASK.replace("index: 1", "index: 0") + "leaderboards:",
        ["tasks", 1, "index"],
        "    name: T0 >> index: 0",
    ),
    (
        "  - title: Results\n    key: main\n",
        "  - title: Results\n",
        ["leaderboards", 0, "key"],
        "  - title: Results",
    ),
    (
        "pages:\n  - title: Overview\n    file: pages/overview.md\n",
        "pages: overview.md\n",
        ["pages"],
        "pages: overview.md",
    ),
    (
        # Codabench runs both programs at once for this; here it would wait forever.
        "    reference_data: reference_data/\n",
        "    reference_data: reference_data/\n    ingestion_only_during_scoring: true\n",
        ["tasks", 0, "ingestion_only_during_scoring"],
        "ingestion_only_during_scoring: true",
    ),
]


@pytest.mark.parametrize(("old", "new", "loc", "needle"), ERROR_CASES)
def test_each_problem_has_its_loc_and_line(old: str, new: str, loc: list[Any], needle: str) -> None:
    text = edit(old, new)
    found = [e for e in errors_of(text) if e["loc"] == loc]
    assert found
    after, _, needle = needle.rpartition(" >> ")
    assert found[0]["line"] == line_of(text, needle, after), found


def test_no_leaderboard_and_no_phases_are_errors() -> None:
    text = BASE.split("leaderboards:")[0]
    text = edit("phases:\n  - index: 0", "phases: []\nold:\n  - index: 0", text)
    errors = errors_of(text)
    assert {
        "loc": ["leaderboards"],
        "line": 1,
        "msg": "at least one leaderboard is required",
    } in errors
    assert [e["line"] for e in errors if e["loc"] == ["phases"]] == [line_of(text, "phases: []")]


def test_every_problem_is_reported_at_once() -> None:
    text = edit("version: 2", "version: 3")
    text = edit("      - 0\n", "      - 9\n", text)
    text = edit("start: 1-1-2026", "start: soon", text)
    text = edit("max_submissions: 5", "max_submissions: -2", text)
    with pytest.raises(InvalidInput) as caught:
        parse_competition(text)
    assert caught.value.message == "competition.yaml has 4 problems"
    assert [e["line"] for e in caught.value.errors] == sorted(
        e["line"] for e in caught.value.errors
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-01-01", datetime(2026, 1, 1, tzinfo=UTC)),
        ("2026-01-01 12:00", datetime(2026, 1, 1, 12, tzinfo=UTC)),
        ("2026-01-01T12:00:30", datetime(2026, 1, 1, 12, 0, 30, tzinfo=UTC)),
        ("2026-01-01T12:00:00Z", datetime(2026, 1, 1, 12, tzinfo=UTC)),
        ("2026-01-01T14:00:00+02:00", datetime(2026, 1, 1, 12, tzinfo=UTC)),
        ("2026-01-01 07:00:00.5 -5", datetime(2026, 1, 1, 12, 0, 0, 500_000, tzinfo=UTC)),
        ("1-1-2026", datetime(2026, 1, 1, tzinfo=UTC)),
        ("1/31/2026", datetime(2026, 1, 31, tzinfo=UTC)),
        ("12-31-2026", datetime(2026, 12, 31, tzinfo=UTC)),
    ],
)
def test_date_forms(text: str, expected: datetime) -> None:
    assert parse_date(text) == expected
    spec = parse_competition(edit("start: 1-1-2026", f"start: {text}"))
    assert spec.phases[0].start == expected


@pytest.mark.parametrize(
    "text",
    [
        "31-12-2026",
        "2026/01/01",
        "1-1-26",
        "2026-02-30",
        "1/1-2026",
        "tomorrow",
        "0001-01-01T00:00+01:00",  # in UTC, before the first year a date can hold
        "9999-12-31T23:59-01:00",
    ],
)
def test_bad_dates(text: str) -> None:
    assert parse_date(text) is None


def test_month_day_year_dates_are_month_first() -> None:
    assert parse_date("2-1-2026") == datetime(2026, 2, 1, tzinfo=UTC)
    assert parse_date("2026-01-01T00:00:00+01:00") == datetime(
        2025, 12, 31, 23, tzinfo=timezone(timedelta(0))
    )


def test_singular_leaderboard_spelling_and_default_indexes() -> None:
    text = BASE.replace("  - index: 0\n    name: Dev", "  - name: Dev")
    text = text.replace("  - index: 0\n    name: T0", "  - name: T0")
    second = "leaderboard:\n  - title: Second\n    key: second\n    columns:\n      - key: s\n"
    text = edit("leaderboards:\n", second, text)
    spec = parse_competition(text)
    assert [b.key for b in spec.leaderboards] == ["second", "main"]
    assert [b.index for b in spec.leaderboards] == [0, 1]
    assert spec.leaderboards[0].columns[0].title == "s"
    assert spec.phases[0].index == 0 and spec.tasks[0].index == 0


def test_a_single_leaderboard_mapping_is_accepted() -> None:
    text = edit(
        "leaderboards:\n  - title: Results\n    key: main\n    columns:",
        "leaderboard:\n  title: Results\n  key: main\n  columns:",
    )
    assert parse_competition(text).leaderboards[0].key == "main"


def test_column_options_and_phase_limits() -> None:
    text = edit(
        "        index: 0\n",
        "        index: 0\n        sorting: ASC\n        precision: 3\n        hidden: true\n"
        + SECOND_COLUMN
        + "        computation: avg\n        computation_indexes: [0]\n",
    )
    text = edit(
        "max_submissions: 5",
        "max_submissions: 5\n    max_submissions_per_day: 0\n    execution_time_limit: 600",
        text,
    )
    spec = parse_competition(text)
    first, second = spec.leaderboards[0].columns
    assert (first.sorting, first.precision, first.hidden) == ("asc", 3, True)
    assert (second.computation, second.computation_indexes) == ("avg", (0,))
    # 0 is no cap, as on Codabench.
    phase = spec.phases[0]
    assert (phase.max_submissions_per_day, phase.execution_time_limit) == (None, 600)


def test_unknown_keys_are_warnings_and_kept_known_ones_silent() -> None:
    text = edit(
        "docker_image:",
        "colour: blue\nregistration_auto_approve: true\nfact_sheet: {a: [1, 2]}\ndocker_image:",
    )
    text = edit("    name: T0\n", "    name: T0\n    flavour: mint\n    is_public: false\n", text)
    spec = parse_competition(text)
    assert [(w.loc, w.line) for w in spec.warnings] == [
        (("colour",), line_of(text, "colour")),
        (("tasks", 0, "flavour"), line_of(text, "flavour")),
    ]
    assert spec.extra == {
        "colour": "blue",
        "registration_auto_approve": True,
        "fact_sheet": {"a": [1, 2]},
    }


def test_json_round_trip_is_exact() -> None:
    text = edit("leaderboards:", "solutions:\n  - path: sol\n    tasks: [0]\nleaderboards:")
    text = edit("docker_image:", "odd: {when: 2026-01-01}\ndocker_image:", text)
    spec = parse_competition(text)
    data = json.loads(json.dumps(spec.to_json()))
    assert data["phases"][0]["start"] == "2026-01-01T00:00:00+00:00"
    assert CompetitionSpec.from_json(data) == spec


@pytest.mark.parametrize(
    ("text", "msg"),
    [
        ("a: &a [1, 2]\n" + "".join(f"b{i}: [*a, *a, *a]\n" for i in range(12)), "aliases"),
        ("title: [unclosed\n", "not valid YAML"),
        ("title: " + "[" * 50_000 + "]" * 50_000 + "\n", "nested more than"),
        ("", "empty"),
        ("# only a comment\n", "empty"),
        ("title: x\n" + "#" * (1 << 20), "larger than"),
    ],
)
def test_hostile_or_broken_yaml_is_refused(text: str, msg: str) -> None:
    errors = errors_of(text)
    assert len(errors) == 1 and msg in errors[0]["msg"]


def test_a_recursive_alias_does_not_hang() -> None:
    errors = errors_of(BASE + "extra_thing: &x [*x]\n")
    assert any(e["loc"][0] == "extra_thing" for e in errors)


def test_a_list_at_the_top_is_refused_with_its_line() -> None:
    assert errors_of("- 1\n- 2\n")[0]["loc"] == []


def test_unsafe_yaml_tags_are_refused() -> None:
    errors = errors_of(edit("title: Demo", "title: !!python/object:os.system ls"))
    assert errors[0]["loc"] == ["title"]


def test_schema_file_is_current_and_covers_every_top_level_key() -> None:
    schema = bundle_json_schema()
    path = Path(__file__).resolve().parents[2] / "docs" / "bundle-schema.json"
    assert json.loads(path.read_text()) == schema
    assert set(schema["properties"]) >= ACCEPTED_TOP_LEVEL_KEYS
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"


@pytest.mark.skipif(
    not MIRROR.exists(),
    reason="set BENCHGEN_CODABENCH_EXAMPLES to a git checkout of codalab/competition-examples",
)
def test_published_codabench_bundles_parse() -> None:
    for name in REAL_BUNDLES:
        text = subprocess.run(  # noqa: S603 - a fixed git command on a read-only mirror
            ["git", "-C", str(MIRROR), "show", f"HEAD:{name}"],  # noqa: S607
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        spec = parse_competition(text)
        assert spec.warnings == (), name
        assert spec.phases and spec.tasks and spec.leaderboards
        assert CompetitionSpec.from_json(spec.to_json()) == spec


@pytest.mark.parametrize(
    ("old", "new", "loc", "msg"),
    [
        ("title: Demo", 'title: "\\u202eevil"', ["title"], "U+202E (RIGHT-TO-LEFT OVERRIDE)"),
        ("title: Demo", 'title: "evil\\x00"', ["title"], "U+0000"),
        ("title: Demo", f"title: {'x' * 201}", ["title"], "at most 200 characters"),
        ("description: A demo", 'description: "a\\u2066b"', ["description"], "U+2066"),
        ("    name: Dev", '    name: "D\\tev"', ["phases", 0, "name"], "U+0009"),
        ("    name: T0", '    name: "T\\u202d0"', ["tasks", 0, "name"], "U+202D"),
        ("  - title: Overview", '  - title: "O\\x07"', ["pages", 0, "title"], "U+0007"),
        ("  - title: Results", '  - title: "R\\u2067"', ["leaderboards", 0, "title"], "U+2067"),
        (
            "      - title: Accuracy",
            '      - title: "A\\x1b"',
            ["leaderboards", 0, "columns", 0, "title"],
            "U+001B",
        ),
        # A key is the title when none is given, and a column's key heads its scores.
        ("    key: main", '    key: "ma\\nin"', ["leaderboards", 0, "key"], "U+000A"),
        (
            "key: accuracy",
            'key: "\\u202eaccuracy"',
            ["leaderboards", 0, "columns", 0, "key"],
            "U+202E",
        ),
        (
            "key: accuracy",
            f"key: {'k' * 201}",
            ["leaderboards", 0, "columns", 0, "key"],
            "at most 200 characters",
        ),
    ],
)
def test_titles_names_and_prose_get_the_text_checks_with_their_line(
    old: str, new: str, loc: list[Any], msg: str
) -> None:
    # The same hygiene as POST /benchmarks (core/text.py), and an over-long title is refused,
    # never cut to fit.
    text = edit(old, new)
    found = [e for e in errors_of(text) if e["loc"] == loc]
    assert len(found) == 1 and msg in found[0]["msg"], errors_of(text)
    assert found[0]["line"] == line_of(text, new)


def test_bundle_limits_match_the_typed_ones() -> None:
    """A bundle's title is held to the length a typed one is: the longest either door takes."""
    longest, over = "T" * MAX_TITLE, "T" * (MAX_TITLE + 1)
    assert parse_competition(edit("title: Demo", f"title: {longest}")).title == longest
    assert parse(BenchmarkIn, {"title": longest, "format": "qa", "questions": []}).title == longest
    assert "at most 200 characters" in errors_of(edit("title: Demo", f"title: {over}"))[0]["msg"]
    with pytest.raises(InvalidInput):
        parse(BenchmarkIn, {"title": over, "format": "qa", "questions": []})


@pytest.mark.parametrize(
    ("old", "new", "loc", "needle"),
    [
        ("title: Demo", 'title: "Demo \\ud800"', ["title"], "title:"),
        ("name: Dev", 'name: "Dev \\udfff"', ["phases", 0, "name"], "Dev "),
        ("key: accuracy", 'key: "acc\\ud800"', ["leaderboards", 0, "columns", 0, "key"], "acc"),
        ("docker_image", '"dock\\ud800"', [], "dock"),
        # "\0" is a NUL: PostgreSQL keeps it in neither text nor JSON (a 500 there).
        ("key: accuracy", 'key: "acc\\0"', ["leaderboards", 0, "columns", 0, "key"], "acc"),
        ("title: Demo", 'title: "Demo \\0"', ["title"], "title:"),
    ],
)
def test_a_nul_or_lone_surrogate_escape_is_refused_where_it_stands(
    old: str, new: str, loc: list[Any], needle: str
) -> None:
    """YAML's "\\ud800" and "\\0" are no text: kept, they could not be stored (a 500)."""
    text = edit(old, new)
    errors = [e for e in errors_of(text) if "surrogate" in e["msg"]]
    assert [(e["loc"], e["line"]) for e in errors] == [(loc, line_of(text, needle))]
