"""Formats in and out: mapped imports from JSONL/CSV/Parquet/Arrow, presets, exports."""

from __future__ import annotations

import ast
import io
import json
import zipfile
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from benchgen.core.context import Principal
from benchgen.core.errors import InvalidInput, PermissionDenied
from benchgen.core.permissions import PrincipalKind, Scope
from benchgen.services.benchmarks import exports, imports, lifecycle
from tests.support import MCQ, World

HOSTILE = 'Evil """ title\n{{ 7*7 }} !!python/object:os.system \'; import os #'


def parquet(rows: list[dict[str, Any]]) -> bytes:
    sink = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows), sink)
    return sink.getvalue()


def arrow_stream(rows: list[dict[str, Any]]) -> bytes:
    """What `datasets.Dataset.save_to_disk` writes: an Arrow IPC stream."""
    table = pa.Table.from_pylist(rows)
    sink = io.BytesIO()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue()


def jsonl(rows: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(row) + "\n" for row in rows).encode()


def questions(world: World, user: str, benchmark_id: str) -> list[dict[str, Any]]:
    return world.do(Principal.web(user), lifecycle.list_questions, benchmark_id)


def do_import(world: World, user: str, data: bytes, name: str, **spec: Any) -> str:
    spec.setdefault("title", "Imported")
    created = world.do(Principal.web(user), imports.import_file, data, name, spec)
    return created.benchmark.id


def test_inspect_preset_reads_inspect_samples(world: World) -> None:
    ana = world.user("ana@example.com")
    rows = [
        {"input": "Capital of France?", "target": "Paris", "id": "s1", "metadata": {"k": 1}},
        {"input": "Capital of Japan?", "target": ["Tokyo", "Tōkyō"], "id": "s2"},
    ]
    bm = do_import(world, ana, jsonl(rows), "samples.jsonl", preset="inspect")
    got = questions(world, ana, bm)
    assert [q["answer"] for q in got] == [["Paris"], ["Tokyo", "Tōkyō"]]
    view = world.do(Principal.web(ana), lifecycle.get_benchmark, bm)
    assert view.format == "qa" and view.question_count == 2


def test_inspect_preset_mcq_with_letter_targets(world: World) -> None:
    ana = world.user("ana@example.com")
    rows = [{"input": "Sky?", "choices": ["Green", "Blue"], "target": "B", "id": 7}]
    bm = do_import(world, ana, jsonl(rows), "mcq.jsonl", preset="inspect")
    (got,) = questions(world, ana, bm)
    assert got["answer"] == "B" and got["choices"] == {"A": "Green", "B": "Blue"}


def test_lm_eval_mmlu_layout_from_parquet(world: World) -> None:
    ana = world.user("ana@example.com")
    rows = [
        {"question": "2+2?", "subject": "math", "choices": ["3", "4", "5", "6"], "answer": 1},
        {"question": "Red+blue?", "subject": "art", "choices": ["Purple", "Green"], "answer": 0},
    ]
    bm = do_import(world, ana, parquet(rows), "test-00000.parquet", preset="lm_eval_mcq")
    got = questions(world, ana, bm)
    assert [q["answer"] for q in got] == ["B", "A"]
    assert [q["tags"] for q in got] == [["math"], ["art"]]


def test_lm_eval_arc_layout_with_labelled_choices(world: World) -> None:
    ana = world.user("ana@example.com")
    rows = [
        {
            "id": "Mercury_1",
            "question": "Which is a gas?",
            "choices": {"text": ["Iron", "Steam", "Wood"], "label": ["1", "2", "3"]},
            "answerKey": "2",
        }
    ]
    bm = do_import(world, ana, parquet(rows), "arc.parquet", preset="lm_eval_mcq")
    (got,) = questions(world, ana, bm)
    assert got["answer"] == "B"


def test_lm_eval_hellaswag_layout_from_a_datasets_arrow_file(world: World) -> None:
    ana = world.user("ana@example.com")
    rows = [{"ctx": "A man sits", "endings": ["down.", "up.", "fly.", "sky."], "label": "0"}]
    data = arrow_stream(rows)
    bm = do_import(
        world, ana, data, "data-00000-of-00001.arrow", file_format="hf", preset="lm_eval_mcq"
    )
    (got,) = questions(world, ana, bm)
    assert got["answer"] == "A" and got["prompt"] == "A man sits"


def test_mapping_with_several_choice_columns_and_letter_answers(world: World) -> None:
    ana = world.user("ana@example.com")
    content = "q,opa,opb,opc,key,topic\nSky?,Green,Blue,Red,b,nature\n"
    mapping = {
        "prompt": "q",
        "choices": ["opa", "opb", "opc"],
        "answer": "key",
        "answer_is": "letter",
        "tags": "topic",
    }
    bm = do_import(world, ana, content.encode(), "x.csv", mapping=mapping)
    (got,) = questions(world, ana, bm)
    assert got["answer"] == "B" and got["tags"] == ["nature"]


def test_answer_as_choice_text(world: World) -> None:
    ana = world.user("ana@example.com")
    rows = [{"q": "Sky?", "options": ["Green", "Blue"], "right": "Blue"}]
    mapping = {"prompt": "q", "choices": "options", "answer": "right", "answer_is": "text"}
    bm = do_import(world, ana, jsonl(rows), "x.jsonl", mapping=mapping)
    assert questions(world, ana, bm)[0]["answer"] == "B"


def test_every_bad_row_is_reported_with_its_line_and_nothing_is_stored(world: World) -> None:
    ana = world.user("ana@example.com")
    rows = [
        {"question": "ok?", "choices": ["a", "b"], "answer": 0},
        {"question": "bad index?", "choices": ["a", "b"], "answer": 5},
        {"question": "", "choices": ["a", "b"], "answer": 1},
        {"choices": ["a", "b"], "answer": 1},
    ]
    content = b"\n".join(json.dumps(row).encode() for row in rows)
    with pytest.raises(InvalidInput) as caught:
        do_import(world, ana, content, "x.jsonl", preset="lm_eval_mcq")
    places = [problem["loc"] for problem in caught.value.errors]
    assert places == [["file", 2, "answer"], ["file", 4, "prompt"]]
    assert caught.value.message.startswith("line 2.answer")
    # The empty prompt passes the mapping and fails validation: still by its line.
    good = b"\n".join(json.dumps(row).encode() for row in rows[:1] + rows[2:3])
    with pytest.raises(InvalidInput) as caught:
        do_import(world, ana, good, "x.jsonl", preset="lm_eval_mcq")
    assert caught.value.errors[0]["loc"][:2] == ["file", 2]
    mine = world.do(Principal.web(ana), lifecycle.list_benchmarks, True)
    assert mine == []


def test_lines_that_are_no_json_are_reported_with_the_other_rows_problems(
    world: World,
) -> None:
    ana = world.user("ana@example.com")
    good, wrong = '{"prompt": "2+2?", "answer": "4"}', '{"prompt": "3+3?"}'
    content = "\n".join([good, "not json", wrong, "[1, 2]", good]).encode()
    with pytest.raises(InvalidInput) as caught:
        do_import(world, ana, content, "x.jsonl")
    assert [problem["loc"][:2] for problem in caught.value.errors] == [
        ["file", 2],
        ["file", 3],
        ["file", 4],
    ]
    assert caught.value.message.startswith("line 2: not valid JSON")
    assert world.do(Principal.web(ana), lifecycle.list_benchmarks, True) == []


def test_parquet_rows_are_numbered_as_rows(world: World) -> None:
    ana = world.user("ana@example.com")
    data = parquet([{"input": "a?", "target": "x"}, {"input": None, "target": "y"}])
    with pytest.raises(InvalidInput) as caught:
        do_import(world, ana, data, "x.parquet", preset="inspect")
    assert caught.value.errors[0]["loc"] == ["file", 2, "prompt"]
    assert caught.value.message.startswith("row 2")


def test_chat_message_inputs_and_broken_files_are_refused(world: World) -> None:
    ana = world.user("ana@example.com")
    rows = [{"input": [{"role": "user", "content": "hi"}], "target": "x"}]
    with pytest.raises(InvalidInput, match="chat messages"):
        do_import(world, ana, jsonl(rows), "x.jsonl", preset="inspect")
    with pytest.raises(InvalidInput, match="not a readable parquet"):
        do_import(world, ana, b"PAR1 not really", "x.parquet")
    with pytest.raises(InvalidInput, match="no lm-eval"):
        do_import(world, ana, jsonl([{"x": 1}]), "x.jsonl", preset="lm_eval_mcq")


def test_import_needs_the_right_to_create(world: World) -> None:
    ana = world.user("ana@example.com")
    reader = world.principal(PrincipalKind.API, ana, frozenset({Scope.READ}))
    with pytest.raises(PermissionDenied):
        world.do(reader, imports.import_file, b"{}", "x.jsonl", {"title": "t"})


# ---------------------------------------------------------------- export


def test_jsonl_export_imports_back_unchanged(world: World) -> None:
    ana = world.user("ana@example.com")
    bm = world.benchmark(ana, MCQ)
    found = world.do(Principal.web(ana), exports.export_benchmark, bm, "jsonl")
    assert found.filename == f"{bm}.jsonl"
    again = do_import(world, ana, found.data, "back.jsonl")
    assert questions(world, ana, again) == questions(world, ana, bm)


def test_export_needs_the_key(world: World) -> None:
    ana, bob = world.user("ana@example.com"), world.user("bob@example.com")
    bm = world.benchmark(ana, MCQ)
    world.do(Principal.web(ana), lifecycle.publish_benchmark, bm)
    with pytest.raises(PermissionDenied):
        world.do(Principal.web(bob), exports.export_benchmark, bm, "inspect")


def unzip(data: bytes) -> dict[str, str]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return {name.split("/", 1)[1]: archive.read(name).decode() for name in archive.namelist()}


@pytest.mark.parametrize("fmt", ["inspect", "lm_eval"])
@pytest.mark.parametrize("kind", ["qa", "mcq"])
def test_task_folders_hold_no_user_text(world: World, fmt: str, kind: str) -> None:
    ana = world.user("ana@example.com")
    question: dict[str, Any] = {"prompt": HOSTILE, "answer": ['"""', "{{ x }}"]}
    if kind == "mcq":
        question = {"prompt": HOSTILE, "choices": ['"""', "{{ 7*7 }}"], "answer": "B"}
    spec = {
        "title": HOSTILE.replace("\n", " "),
        "format": kind,
        "description": HOSTILE,
        "questions": [question],
    }
    bm = world.benchmark(ana, spec)
    found = world.do(Principal.web(ana), exports.export_benchmark, bm, fmt)
    files = unzip(found.data)
    assert set(files) == {
        "task.py" if fmt == "inspect" else "task.yaml",
        "README.md",
        "dataset.jsonl",
    }
    for name, text in files.items():
        if name != "dataset.jsonl":
            for piece in ("Evil", "7*7", "!!python", "import os", "{{ x }}"):
                assert piece not in text, (name, piece)
    row = json.loads(files["dataset.jsonl"])
    assert row["prompt"] == HOSTILE
    name = exports.task_name(bm)
    if fmt == "inspect":
        tree = ast.parse(files["task.py"])
        defined = [node.name for node in tree.body if isinstance(node, ast.FunctionDef)]
        assert name in defined
    else:
        task = yaml.safe_load(files["task.yaml"])
        assert task["task"] == name and task["doc_to_text"] == "{{text}}"
        assert "!function" not in files["task.yaml"]


def test_task_names_come_only_from_safe_ids() -> None:
    assert exports.task_name("bm_Ab12") == "benchgen_bm_ab12"
    with pytest.raises(InvalidInput):
        exports.task_name('bm_1"; import os')


def test_a_csv_header_without_the_mapped_columns_is_one_problem(world: World) -> None:
    """Not "the field 'prompt' is missing" on every row: the header, with what it holds."""
    ana = world.user("ana@example.com")
    data = b"prompt\tanswer\nq1\ta1\nq2\ta2\n"
    with pytest.raises(InvalidInput) as caught:
        do_import(world, ana, data, "x.csv")
    message = (
        r"the header needs the columns prompt, answer; it has 'prompt\tanswer' "
        "(columns must be separated by commas, not tabs; a file named .tsv is read with tabs)"
    )
    assert caught.value.errors == [{"loc": ["file", 1], "msg": message}]
    with pytest.raises(InvalidInput) as caught:
        do_import(world, ana, b"q,a\nq1,a1\n", "x.csv", mapping={"prompt": "q"})
    message = "the header needs the columns q, answer; it has 'q', 'a'"
    assert caught.value.errors == [{"loc": ["file", 1], "msg": message}]
    bm = do_import(world, ana, data, "x.tsv")
    assert [row["answer"] for row in questions(world, ana, bm)] == [["a1"], ["a2"]]


def test_a_file_that_is_not_utf8_is_refused_at_its_line(world: World) -> None:
    ana = world.user("ana@example.com")
    data = '{"prompt": "2+2?", "answer": "4"}\n{"prompt": "Où?", "answer": "x"}\n'
    with pytest.raises(InvalidInput) as caught:
        do_import(world, ana, data.encode("cp1252"), "x.jsonl")
    assert caught.value.errors[0]["loc"] == ["file", 2]
    assert caught.value.message.startswith("file line 2: not UTF-8 text at column 14 (byte 0xf9)")
    with pytest.raises(InvalidInput, match="is UTF-16 text; save it as UTF-8"):
        do_import(world, ana, data.encode("utf-16"), "x.jsonl")
