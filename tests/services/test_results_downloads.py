"""A run's downloads as a data scientist reads them: CSV through the csv module, JSONL one object
per line, every text as the run stored it (formulas aside)."""

from __future__ import annotations

import csv
import io
import json

import pytest

from benchgen.core.context import Principal
from benchgen.services.runs import launch, results
from benchgen.services.runtime import Runtime
from tests.services.test_run_samples import sampled_run
from tests.services.test_runs import work_all
from tests.support import World, export_whole

ECHO = "mdl_builtin_echo"
AWKWARD = {
    "title": "Awkward",
    "format": "qa",
    "questions": [
        {"prompt": "Capital of Japan, in kanji?", "answer": ["東京", "Tōkyō"]},
        {"prompt": 'line one\nline "two", comma\r\nthree', "answer": "a\u2028b"},
    ],
}


def _export(world: World, runtime: Runtime, fmt: str) -> str:
    ana = world.user("ana@example.com")
    benchmark = world.benchmark(ana, AWKWARD)
    run_id = world.do(Principal.web(ana), launch.start_run, benchmark, ECHO).id
    work_all(runtime)
    _, text = world.do(Principal.web(ana), export_whole, run_id, fmt)
    return text


def test_csv_lists_keep_their_text_readable(world: World, runtime: Runtime) -> None:
    table = list(csv.DictReader(io.StringIO(_export(world, runtime, "csv"))))
    # The accepted answers as typed, not as \u escapes nobody can read in a spreadsheet.
    assert table[0]["expected"] == '["東京", "Tōkyō"]'
    assert json.loads(table[0]["expected"]) == ["東京", "Tōkyō"]
    assert json.loads(table[1]["expected"]) == ["a\u2028b"]


def test_csv_keeps_newlines_quotes_and_commas_in_one_cell(world: World, runtime: Runtime) -> None:
    table = list(csv.DictReader(io.StringIO(_export(world, runtime, "csv"))))
    assert len(table) == 2
    assert table[1]["prompt"] == 'line one\nline "two", comma\r\nthree'
    assert table[1]["raw"].startswith(table[1]["prompt"])  # the echo baseline's reply


def test_jsonl_is_one_object_per_line_even_with_line_separators(
    world: World, runtime: Runtime
) -> None:
    text = _export(world, runtime, "jsonl")
    # splitlines() also breaks at U+2028 and \r: a line separator in a value must be escaped.
    rows = [json.loads(line) for line in text.splitlines()]
    assert [row["position"] for row in rows] == [0, 1]
    assert rows[1]["expected"] == ["a\u2028b"]
    assert rows[0]["expected"] == ["東京", "Tōkyō"]


def test_a_download_read_in_chunks_is_every_result_once_in_order(
    world: World, runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = sampled_run(world, runtime)  # 12 questions, 3 samples each
    monkeypatch.setattr(results, "EXPORT_CHUNK", 5)  # chunks of 5, 5 and 2
    owner = Principal.web(made.ana)
    _, text = world.do(owner, export_whole, made.run, "jsonl")
    assert [json.loads(line) for line in text.splitlines()] == world.do(
        owner, results.list_results, made.run
    )
    _, table = world.do(owner, export_whole, made.run, "csv")
    rows = list(csv.DictReader(io.StringIO(table)))
    assert [int(row["position"]) for row in rows] == list(range(12))
    assert all(row["sample_2_raw"] for row in rows)
