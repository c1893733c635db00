"""What a program wrote is kept as a zip only when that zip can be unpacked again (for a
rescore): more files than `extract_zip` takes are refused when packing, not when rescoring."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from benchgen.bundles import archive
from benchgen.bundles.archive import DEFAULT_LIMITS, extract_zip, zip_plain_files
from benchgen.core.errors import InvalidInput


def _files(folder: Path, count: int) -> Path:
    folder.mkdir()
    for i in range(count):
        (folder / f"{i}.txt").touch()
    return folder


def test_more_files_than_extraction_takes_are_refused_when_packing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Packing reads extraction's own limit (20,000 files; five here, so as not to write 20,001).
    monkeypatch.setattr(archive, "DEFAULT_LIMITS", replace(DEFAULT_LIMITS, max_files=5))
    folder = _files(tmp_path / "out", 6)
    with pytest.raises(InvalidInput, match="more than 5 files"):
        zip_plain_files(folder, tmp_path / "kept.zip")


def test_as_many_as_extraction_takes_are_packed_and_unpack_again(tmp_path: Path) -> None:
    folder = _files(tmp_path / "out", 3)
    (folder / "sub").mkdir()
    with pytest.raises(InvalidInput, match="more than 3 files and folders"):
        zip_plain_files(folder, tmp_path / "kept.zip", max_files=3)
    zip_plain_files(folder, tmp_path / "kept.zip", max_files=4)
    (tmp_path / "again").mkdir()
    names = extract_zip((tmp_path / "kept.zip").read_bytes(), tmp_path / "again")
    assert sorted(names) == ["0.txt", "1.txt", "2.txt"]
