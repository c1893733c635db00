"""The Python client's file formats against the app in this process: mapped imports from a path
or bytes, their row-numbered errors, and exports that read back the same."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from fastapi.testclient import TestClient

from benchgen.client import InvalidInput, NotFound, PermissionDenied
from tests.client.relay import connect
from tests.support import MCQ, World

ALL = ["read", "runs", "create", "edit", "publish"]


def test_import_from_a_path_with_a_preset_and_from_bytes_with_a_mapping(
    server: TestClient, world: World, tmp_path: Path
) -> None:
    ana = world.user("ana@example.com")
    path = tmp_path / "samples.jsonl"
    path.write_text(json.dumps({"input": "Capital of France?", "target": "Paris"}) + "\n")
    with connect(server, world.token(ana, ALL)) as bg:
        created = bg.import_file(path, "Capitals", preset="inspect")
        assert created["benchmark"]["format"] == "qa" and created["warnings"] == []
        assert bg.quota is not None
        got = bg.questions(created["benchmark"]["id"])
        assert got[0]["prompt"] == "Capital of France?" and got[0]["answer"] == ["Paris"]
        sink = io.BytesIO()
        table = [{"q": "Sky?", "opts": ["Green", "Blue"], "key": "b"}]
        pq.write_table(pa.Table.from_pylist(table), sink)
        mapping = {"prompt": "q", "choices": "opts", "answer": "key", "answer_is": "letter"}
        mcq = bg.import_file(sink.getvalue(), "Sky", mapping=mapping, filename="sky.parquet")
        assert mcq["benchmark"]["format"] == "mcq"
        assert bg.questions(mcq["benchmark"]["id"])[0]["answer"] == "B"


def test_bad_rows_raise_with_their_numbers(server: TestClient, world: World) -> None:
    ana = world.user("ana@example.com")
    rows = b'{"input": "ok?", "target": "x"}\n{"target": "y"}\n'
    with connect(server, world.token(ana, ALL)) as bg:
        with pytest.raises(InvalidInput) as caught:
            bg.import_file(rows, "Broken", preset="inspect")
        assert caught.value.errors[0]["loc"] == ["body", "file", 2, "prompt"]
        assert bg.list_benchmarks(mine=True) == []
    with connect(server, world.token(ana, ["read"])) as reader, pytest.raises(PermissionDenied):
        reader.import_file(rows, "Refused", preset="inspect")


def test_export_returns_the_file_and_round_trips(server: TestClient, world: World) -> None:
    ana, bob = world.user("ana@example.com"), world.user("bob@example.com")
    bm = world.benchmark(ana, MCQ)
    with connect(server, world.token(ana, ALL)) as bg:
        data = bg.export_benchmark(bm)
        again = bg.import_file(data, "Again", filename="back.jsonl")
        assert bg.questions(again["benchmark"]["id"]) == bg.questions(bm)
        for fmt in ("inspect", "lm_eval"):
            folder = bg.export_benchmark(bm, fmt)
            with zipfile.ZipFile(io.BytesIO(folder)) as archive:
                assert any(name.endswith("dataset.jsonl") for name in archive.namelist())
    with connect(server, world.token(bob, ALL)) as stranger, pytest.raises(NotFound):
        stranger.export_benchmark(bm, "inspect")
