"""`benchgen benchmarks import` names a bad title and every bad row in one try."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from benchgen.cli import app
from tests.support import World


@pytest.mark.usefixtures("cli_env")
def test_the_cli_import_reports_its_title_with_its_rows(world: World, tmp_path: Path) -> None:
    world.user("ana@example.com")
    path = tmp_path / "q.jsonl"
    path.write_bytes(b'{"prompt": "p", "answer": ["a"]}\n{"prompt": "", "answer": ["a"]}\n')
    args = ["benchmarks", "import", str(path), "--title", " ", "--as", "ana@example.com"]
    failed = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    assert failed.exit_code == 1
    for said in ("title: must not be empty", "line 2, prompt: must not be empty"):
        assert said in failed.output, failed.output
