"""A participant's code runs inside the organiser's ingestion program: what it leaves behind
must not reach the scoring program as anything but plain files."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from benchgen.bundles.archive import extract_zip
from benchgen.bundles.evaluation import Environment, Submission, evaluate_task
from benchgen.bundles.layout import LoadedBundle, load_bundle
from benchgen.bundles.sandbox import Limits
from benchgen.bundles.trees import drop_special_entries
from tests.bundle_factory import CODE_INGESTION, bundle, require_sandbox, zip_of

LIMITS = Limits(wall_seconds=30, cpu_seconds=20, memory_bytes=1 << 30, processes=32)
COLUMNS = ["accuracy", "errors"]


@pytest.fixture(scope="module")
def env() -> Environment:
    return Environment(require_sandbox().resolve(), LIMITS)


@pytest.fixture
def loaded(tmp_path: Path) -> LoadedBundle:
    root = tmp_path / "bundle"
    root.mkdir()
    extract_zip(bundle(ingestion=CODE_INGESTION), root)
    return load_bundle(root)


def code(tmp_path: Path, source: str) -> Path:
    folder = tmp_path / "submission"
    folder.mkdir()
    extract_zip(zip_of({"model.py": source.encode()}), folder)
    return folder


def test_a_link_to_the_reference_data_scores_nothing(
    tmp_path: Path, env: Environment, loaded: LoadedBundle
) -> None:
    # The link dangles where the code runs and leads to the answers where the scorer reads.
    cheat = code(
        tmp_path,
        "import os\n"
        "os.symlink('/app/input/ref/answers.json', '/app/output/predictions.json')\n"
        "os.symlink('/app/input/ref', '/app/shared/ref')\n"
        "os._exit(0)\n",
    )
    work = tmp_path / "work"
    work.mkdir()
    outcome = evaluate_task(loaded.tasks[0], work, env, Submission(code=cheat), COLUMNS)
    assert outcome.error is None, outcome.log
    assert outcome.scores == {"accuracy": 0.0, "errors": 2.0}
    assert not any(p.is_symlink() for p in (work / "res").iterdir())
    assert not any(p.is_symlink() for p in (work / "shared").iterdir())


def test_honest_code_still_scores(tmp_path: Path, env: Environment, loaded: LoadedBundle) -> None:
    model = code(
        tmp_path, "def predict(prompt):\n    return {'paris': 'paris', '5': '4'}[prompt]\n"
    )
    work = tmp_path / "work"
    work.mkdir()
    outcome = evaluate_task(loaded.tasks[0], work, env, Submission(code=model), COLUMNS)
    assert outcome.scores == {"accuracy": 1.0, "errors": 0.0}, outcome.log


def test_only_plain_files_and_folders_are_kept(tmp_path: Path) -> None:
    (tmp_path / "deep" / "er").mkdir(parents=True)
    (tmp_path / "deep" / "er" / "kept.txt").write_text("x")
    (tmp_path / "deep" / "link").symlink_to("/etc/passwd")
    (tmp_path / "folder-link").symlink_to(tmp_path / "deep")
    os.mkfifo(tmp_path / "deep" / "er" / "pipe")
    drop_special_entries(tmp_path)
    left = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*"))
    assert left == ["deep", "deep/er", "deep/er/kept.txt"]
