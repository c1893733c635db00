"""`benchgen datasets upload` and `list`: a user's training data from files on this machine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from benchgen.cli import app
from benchgen.core.context import Principal
from benchgen.services.datasets import datasets
from tests.support import World

runner = CliRunner()
WIDE = {"COLUMNS": "200"}
HERE = ["--as", "ana@example.com"]
PAIRS = [
    {"prompt": "Capital of France?", "completion": "Paris"},
    {"prompt": "1+1", "completion": "2"},
]


pytestmark = pytest.mark.usefixtures("cli_env")


def test_upload_then_list(world: World, tmp_path: Path) -> None:
    ana = world.user("ana@example.com")
    data = tmp_path / "support.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in PAIRS))
    done = runner.invoke(app, ["datasets", "upload", str(data), *HERE], env=WIDE)
    assert done.exit_code == 0, done.output
    assert "Uploaded dataset ds_" in done.output
    assert "support (prompt_completion, 2 rows" in done.output
    [made] = world.do(Principal.web(ana), datasets.list_datasets)
    assert made.name == "support"
    listed = runner.invoke(app, ["datasets", "list", *HERE], env=WIDE)
    assert listed.exit_code == 0, listed.output
    assert made.id in listed.output


def test_a_mapped_csv_with_a_name(world: World, tmp_path: Path) -> None:
    ana = world.user("ana@example.com")
    data = tmp_path / "qa.csv"
    data.write_text("question,answer\nhi,hello\n")
    args = ["--name", "Greetings", "--map", "prompt=question", "--map", "completion=answer"]
    done = runner.invoke(app, ["datasets", "upload", str(data), *HERE, *args], env=WIDE)
    assert done.exit_code == 0, done.output
    [made] = world.do(Principal.web(ana), datasets.list_datasets)
    assert (made.name, made.source_format) == ("Greetings", "csv")


def test_bad_rows_are_printed_by_line_and_nothing_is_stored(world: World, tmp_path: Path) -> None:
    ana = world.user("ana@example.com")
    data = tmp_path / "chat.jsonl"
    rows = [{"messages": [{"role": "user", "content": "hi"}]}, {"messages": []}]
    data.write_text("".join(json.dumps(row) + "\n" for row in rows))
    done = runner.invoke(app, ["datasets", "upload", str(data), *HERE], env=WIDE)
    assert done.exit_code == 1
    assert "line 1, messages: needs at least one assistant message" in done.output
    assert "line 2, messages: must be a non-empty list" in done.output
    assert world.do(Principal.web(ana), datasets.list_datasets) == []


def test_one_bad_row_is_printed_once(world: World, tmp_path: Path) -> None:
    world.user("ana@example.com")
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"prompt": "hi"}) + "\n")
    done = runner.invoke(app, ["datasets", "upload", str(data), *HERE], env=WIDE)
    assert done.exit_code == 1
    lines = [line for line in done.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: line 1, completion: "), done.output


def test_auto_reads_a_parquet_name_as_parquet(world: World, tmp_path: Path) -> None:
    world.user("ana@example.com")
    data = tmp_path / "notjson.parquet"
    data.write_text(json.dumps(PAIRS[0]) + "\n")
    done = runner.invoke(app, ["datasets", "upload", str(data), *HERE], env=WIDE)
    assert done.exit_code == 1
    assert "Parquet" in done.output and "JSON" not in done.output, done.output


def test_a_bad_map_option(world: World, tmp_path: Path) -> None:
    world.user("ana@example.com")
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps(PAIRS[0]) + "\n")
    done = runner.invoke(app, ["datasets", "upload", str(data), *HERE, "--map", "a=x"], env=WIDE)
    assert done.exit_code == 2
    assert "PART one of messages, prompt, completion" in done.output


def test_a_file_that_is_not_utf8_names_its_line(world: World, tmp_path: Path) -> None:
    world.user("ana@example.com")
    data = tmp_path / "d.csv"
    data.write_bytes("prompt,completion\ncafé,x\n".encode("cp1252"))
    done = runner.invoke(app, ["datasets", "upload", str(data), *HERE], env=WIDE)
    assert done.exit_code == 1
    assert "Error: line 2: not UTF-8 text at column 4 (byte 0xe9)" in done.output, done.output
    assert "Latin-1/Windows-1252 or UTF-16; save it as UTF-8" in done.output


def test_a_one_row_dataset_says_one_row(world: World, tmp_path: Path) -> None:
    world.user("ana@example.com")
    data = tmp_path / "one.jsonl"
    data.write_text(json.dumps(PAIRS[0]) + "\n")
    done = runner.invoke(app, ["datasets", "upload", str(data), *HERE], env=WIDE)
    assert done.exit_code == 0, done.output
    assert "(prompt_completion, 1 row, " in done.output
