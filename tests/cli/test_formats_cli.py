"""`benchgen benchmarks import/export`: files of questions in through presets and mappings, out
for peer tools, on this machine (`--as`) and through a server's API (`--url`)."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from benchgen.app import create_app
from benchgen.cli import app
from benchgen.core.context import Principal
from benchgen.services.benchmarks import exports, lifecycle
from benchgen.services.runtime import Runtime
from tests.client.relay import served_to_the_cli
from tests.support import MCQ, World

runner = CliRunner()
WIDE = {"COLUMNS": "200"}
HERE = ["--as", "ana@example.com"]


pytestmark = pytest.mark.usefixtures("cli_env")


def _file(folder: Path, name: str, data: bytes) -> str:
    path = folder / name
    path.write_bytes(data)
    return str(path)


def _new_id(output: str) -> str:
    return output.split("Created benchmark ", 1)[1].split(":")[0].strip()


def _questions(world: World, user: str, bm: str) -> list[dict[str, object]]:
    return world.do(Principal.web(user), lifecycle.list_questions, bm)


def test_help_names_the_commands_and_options() -> None:
    group = runner.invoke(app, ["benchmarks", "--help"], env=WIDE)
    assert group.exit_code == 0
    for needed in ("import", "export", "upload", "download-bundle", "submit"):
        assert needed in group.output
    made = runner.invoke(app, ["benchmarks", "import", "--help"], env=WIDE)
    for needed in ("--file-format", "--preset", "lm_eval_mcq", "--map", "PART=FIELD", "row"):
        assert needed in made.output
    out = runner.invoke(app, ["benchmarks", "export", "--help"], env=WIDE)
    for needed in ("--format", "inspect", "lm_eval", "--force", "--output"):
        assert needed in out.output


def test_import_with_a_preset_and_with_mappings_here(world: World, tmp_path: Path) -> None:
    ana = world.user("ana@example.com")
    samples = b'{"input": "Capital of France?", "target": "Paris", "id": "s1"}\n'
    path = _file(tmp_path, "capitals.jsonl", samples)
    made = runner.invoke(
        app, ["benchmarks", "import", path, "--preset", "inspect", *HERE], env=WIDE
    )
    assert made.exit_code == 0, made.output
    assert "capitals (qa, 1 question)" in made.output
    assert _questions(world, ana, _new_id(made.output))[0]["answer"] == ["Paris"]
    sink = io.BytesIO()
    rows = [{"q": "Sky?", "a": "Green", "b": "Blue", "key": "b", "topic": "nature"}]
    pq.write_table(pa.Table.from_pylist(rows), sink)
    table = _file(tmp_path, "sky.parquet", sink.getvalue())
    options = ["--title", "Sky", "--format", "mcq", "--file-format", "parquet"]
    maps = ["prompt=q", "choices=a", "choices=b", "answer=key", "answer_is=letter", "tags=topic"]
    for one in maps:
        options += ["--map", one]
    mapped = runner.invoke(app, ["benchmarks", "import", table, *options, *HERE], env=WIDE)
    assert mapped.exit_code == 0, mapped.output
    (question,) = _questions(world, ana, _new_id(mapped.output))
    assert question["answer"] == "B" and question["tags"] == ["nature"]


def test_bad_rows_print_each_line_and_nothing_is_created(world: World, tmp_path: Path) -> None:
    ana = world.user("ana@example.com")
    rows = [
        {"question": "ok?", "choices": ["a", "b"], "answer": 0},
        {"question": "bad?", "choices": ["a", "b"], "answer": 5},
        {"choices": ["a", "b"], "answer": 1},
    ]
    path = _file(tmp_path, "x.jsonl", "\n".join(json.dumps(row) for row in rows).encode())
    failed = runner.invoke(
        app, ["benchmarks", "import", path, "--preset", "lm_eval_mcq", *HERE], env=WIDE
    )
    assert failed.exit_code == 1
    assert "line 2, answer: index '5'" in failed.output
    assert "line 3, prompt: the field 'question' is missing" in failed.output
    table = io.BytesIO()
    pq.write_table(pa.Table.from_pylist([{"input": None, "target": "x"}]), table)
    parquet = _file(tmp_path, "x.parquet", table.getvalue())
    by_row = runner.invoke(
        app, ["benchmarks", "import", parquet, "--preset", "inspect", *HERE], env=WIDE
    )
    assert by_row.exit_code == 1 and "row 1, prompt" in by_row.output
    bad_map = runner.invoke(app, ["benchmarks", "import", path, "--map", "question", *HERE])
    assert bad_map.exit_code == 2 and "PART=FIELD" in bad_map.output
    assert world.do(Principal.web(ana), lifecycle.list_benchmarks, True) == []


def test_export_here_writes_each_format_and_keeps_files(world: World, tmp_path: Path) -> None:
    ana = world.user("ana@example.com")
    bm = world.benchmark(ana, MCQ)
    target = tmp_path / "out.jsonl"
    saved = runner.invoke(app, ["benchmarks", "export", bm, "-o", str(target), *HERE])
    assert saved.exit_code == 0, saved.output
    assert [json.loads(line)["answer"] for line in target.read_text().splitlines()] == ["B", "A"]
    kept = runner.invoke(app, ["benchmarks", "export", bm, "-o", str(target), *HERE])
    assert kept.exit_code == 1 and "--force" in kept.output
    again = runner.invoke(app, ["benchmarks", "export", bm, "-o", str(target), "--force", *HERE])
    assert again.exit_code == 0
    folder = tmp_path / "task.zip"
    zipped = runner.invoke(
        app, ["benchmarks", "export", bm, "--format", "lm_eval", "-o", str(folder), *HERE]
    )
    assert zipped.exit_code == 0, zipped.output
    with zipfile.ZipFile(folder) as archive:
        assert any(name.endswith("/task.yaml") for name in archive.namelist())
    world.user("cy@example.com")
    refused = runner.invoke(app, ["benchmarks", "export", bm, "--as", "cy@example.com"])
    assert refused.exit_code == 1 and "No such" in refused.output
    # Into a folder that does not exist, or onto a folder: one line, not a traceback.
    for where in (tmp_path / "missing" / "out.jsonl", tmp_path):
        failed = runner.invoke(
            app, ["benchmarks", "export", bm, "-o", str(where), "--force", *HERE]
        )
        said = "".join(failed.output.split())  # a long path is wrapped at the terminal's width
        assert failed.exit_code == 1 and f"Error:cannotwrite{where}:" in said
        assert "Traceback" not in failed.output
    piped = runner.invoke(app, ["benchmarks", "export", bm, "-o", "-", *HERE])
    assert piped.exit_code == 0 and [
        json.loads(line)["answer"] for line in piped.output.splitlines()
    ] == ["B", "A"]
    assert not Path("-").exists()


def test_remote_import_and_export(
    world: World, runtime: Runtime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ana = world.user("ana@example.com")
    secret = world.token(ana, ["read", "create"])
    with served_to_the_cli(create_app(runtime.settings, runtime), monkeypatch, secret) as there:
        csv = b"question,A,B,answer\nSky?,Green,Blue,B\n"
        path = _file(tmp_path, "sky.csv", csv)
        maps = ["--map", "prompt=question", "--map", "choices=A", "--map", "choices=B"]
        made = runner.invoke(app, ["benchmarks", "import", path, *maps, *there], env=WIDE)
        assert made.exit_code == 0, made.output
        bm = _new_id(made.output)
        assert "(mcq, 1 question)" in made.output
        bad = _file(tmp_path, "bad.jsonl", b'{"input": "x"}\n{"input": "y", "target": "z"}\n')
        failed = runner.invoke(
            app, ["benchmarks", "import", bad, "--preset", "inspect", *there], env=WIDE
        )
        assert failed.exit_code == 1 and "line 1, answer" in failed.output
        monkeypatch.chdir(tmp_path)
        saved = runner.invoke(
            app, ["benchmarks", "export", bm, "--format", "inspect", *there], env=WIDE
        )
        assert saved.exit_code == 0, saved.output
        name = f"{exports.task_name(bm)}_inspect.zip"
        with zipfile.ZipFile(tmp_path / name) as archive:
            assert f"{exports.task_name(bm)}/task.py" in archive.namelist()
        refused = runner.invoke(app, ["benchmarks", "export", "bm_nowhere", *there])
        assert refused.exit_code == 1 and "No such" in refused.output
