"""Scoring and ingestion programs run at Codabench's paths; their scores are read strictly."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from benchgen.bundles.programs import (
    SCORE_FILE_BYTES,
    ProgramDirs,
    program_argv,
    read_scores,
    run_program,
)
from benchgen.bundles.sandbox import Limits
from benchgen.core.errors import InvalidInput
from tests.bundle_factory import require_sandbox

LIMITS = Limits(wall_seconds=20, cpu_seconds=10, memory_bytes=1 << 30, processes=32)


@pytest.fixture(scope="module")
def runtime() -> Path:
    return require_sandbox()


def folder(root: Path, name: str, files: dict[str, str] | None = None) -> Path:
    path = root / name
    path.mkdir()
    for file, text in (files or {}).items():
        (path / file).write_text(textwrap.dedent(text))
    return path


SCORE = """
    import json, os, sys
    truth = open("/app/input/ref/truth.txt").read().split()
    guess = open(os.path.join(sys.argv[1], "res", "pred.txt")).read().split()
    accuracy = sum(t == g for t, g in zip(truth, guess)) / len(truth)
    try:
        open("/app/input/res/pred.txt", "w")
        tampered = True
    except OSError:
        tampered = False
    json.dump({"accuracy": accuracy, "note": "ok", "cwd": os.getcwd(), "tampered": tampered},
              open(os.path.join(sys.argv[2], "scores.json"), "w"))
"""


def test_placeholders_become_codabench_paths() -> None:
    scoring = program_argv("python $program/score.py $input $output $hidden $shared", "scoring")
    assert scoring == [
        "/bin/sh",
        "-c",
        "python /app/program/score.py /app/input /app/output /app/input/ref /app/shared",
    ]
    command = "python $ingestion_program/ingest.py $input $output $submission_program $program"
    ingestion = program_argv(command, "ingestion")
    assert ingestion[2] == (
        "python /app/program/ingest.py /app/input_data /app/output /app/ingested_program "
        "/app/program"
    )
    assert program_argv("python score.py", "scoring") == ["/bin/sh", "-c", "python score.py"]


def test_a_scoring_program_scores_a_submission(tmp_path: Path, runtime: Path) -> None:
    dirs = ProgramDirs(
        program=folder(tmp_path, "program", {"score.py": SCORE}),
        output=folder(tmp_path, "output"),
        ref=folder(tmp_path, "ref", {"truth.txt": "a b c d"}),
        res=folder(tmp_path, "res", {"pred.txt": "a b c x"}),
    )
    command = "python $program/score.py $input $output"
    outcome = run_program("scoring", command, dirs, runtime=runtime, limits=LIMITS)
    assert outcome.ok, outcome.stderr
    assert read_scores(dirs.output, ["accuracy"]) == {"accuracy": 0.75}
    written = json.loads((dirs.output / "scores.json").read_text())
    assert written["cwd"] == "/app/program" and written["tampered"] is False
    assert (dirs.res / "pred.txt").read_text() == "a b c x"


def test_an_ingestion_program_sees_its_folders(tmp_path: Path, runtime: Path) -> None:
    ingest = """
        import json, os
        paths = ["/app/program", "/app/input_data", "/app/ingested_program", "/app/output",
                 "/app/shared", "/app/input"]
        open("/app/shared/handoff", "w").write("x")
        predictions = open("/app/ingested_program/model.py").read().strip()
        json.dump({"present": [p for p in paths if os.path.isdir(p)], "model": predictions,
                   "data": os.listdir("/app/input_data")}, open("/app/output/seen.json", "w"))
    """
    dirs = ProgramDirs(
        program=folder(tmp_path, "program", {"ingest.py": ingest}),
        output=folder(tmp_path, "output"),
        input_data=folder(tmp_path, "data", {"train.csv": "1,2"}),
        ingested_program=folder(tmp_path, "submission", {"model.py": "predict = 1"}),
        shared=folder(tmp_path, "shared"),
    )
    command = "python $ingestion_program/ingest.py"
    outcome = run_program("ingestion", command, dirs, runtime=runtime, limits=LIMITS)
    assert outcome.ok, outcome.stderr
    seen = json.loads((dirs.output / "seen.json").read_text())
    assert seen == {
        "present": [
            "/app/program",
            "/app/input_data",
            "/app/ingested_program",
            "/app/output",
            "/app/shared",
            "/app/input",
        ],
        "model": "predict = 1",
        "data": ["train.csv"],
    }
    assert (dirs.shared / "handoff").read_text() == "x"


def test_scores_json_and_scores_txt_are_read(tmp_path: Path) -> None:
    (tmp_path / "scores.json").write_text('{"accuracy": 0.5, "f1": 1, "note": "hello"}')
    assert read_scores(tmp_path, ["accuracy", "f1"]) == {"accuracy": 0.5, "f1": 1.0}
    (tmp_path / "scores.json").unlink()
    (tmp_path / "scores.txt").write_text("accuracy: 0.25\nf1:0.5\nnot a score line\n")
    assert read_scores(tmp_path, ["f1", "accuracy"]) == {"f1": 0.5, "accuracy": 0.25}


def test_missing_columns_are_named(tmp_path: Path) -> None:
    (tmp_path / "scores.json").write_text('{"accuracy": 0.5}')
    with pytest.raises(InvalidInput, match="f1, auc") as caught:
        read_scores(tmp_path, ["accuracy", "f1", "auc"])
    assert [e["loc"] for e in caught.value.errors] == [["scores", "f1"], ["scores", "auc"]]


def test_no_score_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match=r"wrote no scores\.json or scores\.txt"):
        read_scores(tmp_path, ["accuracy"])


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("scores.json", '{"accuracy": NaN}'),
        ("scores.json", '{"accuracy": Infinity}'),
        ("scores.json", '{"accuracy": "high"}'),
        ("scores.json", '{"accuracy": true}'),
        ("scores.json", '{"accuracy": [1]}'),
        ("scores.json", "[0.5]"),
        ("scores.json", "{not json"),
        ("scores.txt", "accuracy: nan"),
        ("scores.txt", "accuracy: -inf"),
        ("scores.txt", "accuracy: high"),
    ],
)
def test_non_finite_or_non_numeric_scores_are_refused(tmp_path: Path, name: str, text: str) -> None:
    (tmp_path / name).write_text(text)
    with pytest.raises(InvalidInput):
        read_scores(tmp_path, ["accuracy"])


def test_an_oversized_or_linked_score_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "scores.json").write_text(" " * (SCORE_FILE_BYTES + 1) + "{}")
    with pytest.raises(InvalidInput, match="larger than 1 MiB"):
        read_scores(tmp_path, [])
    (tmp_path / "scores.json").unlink()
    secret = tmp_path / "secret.json"
    secret.write_text('{"accuracy": 1}')
    (tmp_path / "scores.json").symlink_to(secret)
    with pytest.raises(InvalidInput, match="wrote no scores"):
        read_scores(tmp_path, ["accuracy"])


@pytest.mark.parametrize(
    "raw",
    [
        '{"accuracy": 1' + "0" * 400 + "}",  # a float cannot hold it: OverflowError
        '{"accuracy": ' + "[" * 200_000,  # the parser's recursion: RecursionError
        '{"accuracy": ' + "[" * 900 + "]" * 900 + "}",  # parses; its repr would recurse
        '{"accuracy": NaN}',
        '{"accuracy": Infinity}',
        '{"accuracy": 1e400}',
    ],
)
def test_scores_json_with_huge_or_nested_values_is_refused_not_a_crash(
    tmp_path: Path, raw: str
) -> None:
    (tmp_path / "scores.json").write_text(raw)
    with pytest.raises(InvalidInput) as caught:
        read_scores(tmp_path, ["accuracy"])
    assert "finite number" in caught.value.message or "not valid JSON" in caught.value.message
