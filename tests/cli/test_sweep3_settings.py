"""A data folder that cannot be made says why, in words a person acts on."""

from pathlib import Path

import pytest
from typer.testing import CliRunner

from benchgen.cli import app

runner = CliRunner()


def test_a_file_where_the_data_folder_should_be_is_named_as_such(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    taken = tmp_path / "data"
    taken.write_text("not a folder")
    monkeypatch.setenv("BENCHGEN_DATA_DIR", str(taken))
    monkeypatch.delenv("BENCHGEN_DATABASE_URL", raising=False)
    result = runner.invoke(app, ["admin", "settings"])
    assert result.exit_code == 1, result.output
    said = " ".join(result.output.split())
    # It said "File exists", as if that were all right.
    why = "a file is there, not a folder"
    assert said == f"Error: cannot use {taken}: {why}; check BENCHGEN_DATA_DIR."
