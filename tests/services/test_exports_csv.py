"""Leaderboard exports as CSV and JSON: what the leaderboard shows, and no spreadsheet formulas."""

from __future__ import annotations

import csv
import io
import json

import pytest
from sqlalchemy import update

from benchgen.core.context import Principal
from benchgen.core.errors import InvalidInput, NotFound
from benchgen.db.tables import User
from benchgen.services.benchmarks import exports as benchmark_exports
from benchgen.services.runs import exports, launch, leaderboards
from benchgen.services.runtime import Runtime
from tests.services.test_formats import do_import, questions
from tests.services.test_runs import work_all
from tests.support import MCQ, OPERATOR, World, export_whole

FIRST = "mdl_builtin_first"
HOSTILE = {**MCQ, "title": '=HYPERLINK("http://evil.example")'}


@pytest.mark.parametrize(
    ("value", "cell"),
    [
        ("=1+1", "'=1+1"),
        ("+cmd", "'+cmd"),
        ("-2", "-2"),  # a number, as a model answers it: no formula, stays a number
        ("-0.5", "-0.5"),
        ("+1e3", "+1e3"),
        ("-2+3+cmd|' /C calc'!A0", "'-2+3+cmd|' /C calc'!A0"),
        ("-1\n=2", "'-1\n=2"),
        ("-", "'-"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\tx", "'\tx"),
        ("plain", "plain"),
        (0.5, 0.5),
        (-1, -1),
        (None, None),
        (["=a"], '["=a"]'),
    ],
)
def test_spreadsheet_safe(value: object, cell: object) -> None:
    assert exports.spreadsheet_safe(value) == cell


def _board(world: World, runtime: Runtime) -> tuple[str, str, str]:
    ana = world.user("ana@example.com")
    # A display name chosen to run as a formula in whoever opens the export.
    rename = update(User).where(User.id == ana).values(display_name="=cmd|' /C calc'!A0")
    world.ctx_call(OPERATOR, lambda ctx: ctx.session.execute(rename))
    bm = world.benchmark(ana, HOSTILE)
    run_id = world.do(Principal.web(ana), launch.start_run, bm, FIRST).id
    work_all(runtime)
    world.do(Principal.web(ana), leaderboards.add_to_leaderboard, run_id)
    return ana, bm, run_id


def test_leaderboard_csv_and_json(world: World, runtime: Runtime) -> None:
    ana, bm, run_id = _board(world, runtime)
    media, text = world.do(Principal.web(ana), exports.export_leaderboard, bm, "csv")
    assert media == "text/csv"
    header, *rows = list(csv.reader(io.StringIO(text)))
    assert header == [
        "rank",
        "model",
        "submitted_by",
        "Accuracy",
        "score_edited",
        "finished_at",
        "run_id",
    ]
    assert len(rows) == 1 and rows[0][0] == "1" and rows[0][-1] == run_id
    assert rows[0][2] == "'=cmd|' /C calc'!A0"  # text, not a formula
    assert float(rows[0][3]) == 0.5

    media, text = world.do(Principal.web(ana), exports.export_leaderboard, bm, "json")
    document = json.loads(text)
    assert media == "application/json" and document["benchmark_id"] == bm
    assert document["columns"] == [{"key": "accuracy", "title": "Accuracy", "sorting": "desc"}]
    row = document["rows"][0]
    assert row["submitted_by"] == "=cmd|' /C calc'!A0"  # JSON keeps the value as it is
    assert row["scores"] == {"accuracy": 0.5} and row["rank"] == 1


def test_unknown_format_and_hidden_benchmarks(world: World, runtime: Runtime) -> None:
    ana, bm, _ = _board(world, runtime)
    with pytest.raises(InvalidInput):
        world.do(Principal.web(ana), exports.export_leaderboard, bm, "xlsx")
    bob = world.user("bob@example.com")
    with pytest.raises(NotFound):
        world.do(Principal.web(bob), exports.export_leaderboard, bm, "csv")


def test_run_results_csv_has_no_formulas(world: World, runtime: Runtime) -> None:
    ana = world.user("ana@example.com")
    hostile = {
        "title": "Sums",
        "format": "qa",
        "questions": [{"prompt": "=1+1", "answer": "2"}, {"prompt": "@me", "answer": "x"}],
    }
    bm = world.benchmark(ana, hostile)
    run_id = world.do(Principal.web(ana), launch.start_run, bm, "mdl_builtin_echo").id
    work_all(runtime)
    _, text = world.do(Principal.web(ana), export_whole, run_id, "csv")
    table = list(csv.DictReader(io.StringIO(text)))
    assert [row["prompt"] for row in table] == ["'=1+1", "'@me"]


@pytest.mark.parametrize("separator", [";", "\t"])
def test_text_cells_are_quoted_for_spreadsheets_that_split_at_other_separators(
    world: World, runtime: Runtime, separator: str
) -> None:
    # LibreOffice's import splits at every separator ticked (often "," and ";" and tab) and
    # keeps a quoted cell whole: unquoted, this name would give a cell "=cmd|...".
    ana = world.user("ana@example.com")
    payload = f"x{separator}=cmd|' /C calc'!A0"
    rename = update(User).where(User.id == ana).values(display_name=payload)
    world.ctx_call(OPERATOR, lambda ctx: ctx.session.execute(rename))
    questions = [{"prompt": payload, "answer": "-2"}]
    bm = world.benchmark(ana, {"title": "T", "format": "qa", "questions": questions})
    run_id = world.do(Principal.web(ana), launch.start_run, bm, "mdl_builtin_echo").id
    work_all(runtime)
    world.do(Principal.web(ana), leaderboards.add_to_leaderboard, run_id)
    _, board = world.do(Principal.web(ana), exports.export_leaderboard, bm, "csv")
    _, answers = world.do(Principal.web(ana), export_whole, run_id, "csv")
    assert f'"{payload}"' in board and f'"{payload}"' in answers
    # Numbers stay unquoted, so they stay numbers; read as CSV, every value is whole.
    assert board.splitlines()[1].startswith("1,") and ",0.0," in board
    (row,) = csv.DictReader(io.StringIO(board))
    assert row["submitted_by"] == payload


def test_the_question_export_read_back_keeps_formula_like_text_as_typed(world: World) -> None:
    # The import reads back JSONL, never these CSV reports: their `'` must not reach questions.
    ana = world.user("ana@example.com")
    question = {"prompt": "=1+1", "answer": ["-2", "@a"], "tags": ["+t"]}
    bm = world.benchmark(ana, {"title": "=T", "format": "qa", "questions": [question]})
    found = world.do(Principal.web(ana), benchmark_exports.export_benchmark, bm, "jsonl")
    assert "'" not in found.data.decode()
    again = do_import(world, ana, found.data, "back.jsonl")
    assert questions(world, ana, again) == questions(world, ana, bm)
