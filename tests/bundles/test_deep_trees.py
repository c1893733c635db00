"""Folders nested thousands deep, by an upload or a program: refused or walked without
recursion, and always handed back and removed."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchgen.bundles import bwrap
from benchgen.bundles.archive import extract_zip, zip_plain_files
from benchgen.bundles.sandbox import Limits, Mount, run_sandboxed
from benchgen.bundles.trees import remove_tree
from benchgen.core.errors import InvalidInput
from tests.bundle_factory import require_sandbox, zip_of

# Past Python's recursion limit (1000), and, at 2 bytes a level, past the longest path (4096).
DEEP = 2100
LENT_UID = 61999


@pytest.fixture(autouse=True)
def _removed(tmp_path: Path) -> Iterator[None]:
    yield
    # pytest's own clean-up of old test folders recurses: what these tests nest must go first.
    for child in tmp_path.iterdir():
        remove_tree(child) if child.is_dir() else child.unlink()


def make_deep(root: Path, levels: int = DEEP) -> None:
    """`levels` nested folders under `root` with a file at the bottom, made through
    descriptors since the full path is longer than the kernel takes."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(levels):
            os.mkdir("d", dir_fd=fd)
            child = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = child
        os.close(os.open("x", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd))
    finally:
        os.close(fd)


def owners(root: Path) -> set[int]:
    """Every owner under `root`, by a walk that holds one folder open at a time."""
    found: set[int] = set()
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        while True:
            found |= {os.stat(n, dir_fd=fd, follow_symlinks=False).st_uid for n in os.listdir(fd)}
            if "d" not in os.listdir(fd):
                return found
            child = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = child
    finally:
        os.close(fd)


@pytest.mark.skipif(os.geteuid() != 0, reason="only root lends folders to another uid")
def test_a_deep_tree_is_handed_back_whole_after_the_run(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    with bwrap.lent_to(LENT_UID, [out]):
        make_deep(out)
        os.lchown(out, LENT_UID, LENT_UID)
        bwrap._chown_tree([out], LENT_UID, LENT_UID)  # as if the program had made it all
        assert owners(out) == {LENT_UID}
    assert owners(out) == {os.getuid()} and out.stat().st_uid == os.getuid()


def test_zipping_a_deep_program_output_is_refused_clearly(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    make_deep(tmp_path / "out")
    with pytest.raises(InvalidInput, match="nested more than 100 deep"):
        zip_plain_files(tmp_path / "out", tmp_path / "out.zip")


@pytest.mark.parametrize("levels", [101, 2000])
def test_extracting_a_deep_zip_is_refused_before_writing(tmp_path: Path, levels: int) -> None:
    data = zip_of({"ok.txt": b"x", "d/" * levels + "x": b"x"})
    with pytest.raises(InvalidInput, match="nested more than 100 deep") as caught:
        extract_zip(data, tmp_path, loc="submission")
    assert caught.value.errors[0]["loc"][0] == "submission" and not any(tmp_path.iterdir())
    assert extract_zip(zip_of({"d/" * 99 + "x": b"x"}), tmp_path) == ["d/" * 99 + "x"]


def test_a_program_that_nests_folders_too_deep_is_stopped_with_why(tmp_path: Path) -> None:
    runtime = require_sandbox()
    program, output = tmp_path / "program", tmp_path / "output"
    program.mkdir()
    output.mkdir()
    (program / "main.py").write_text(
        "import os\nfor _ in range(3000):\n    os.mkdir('d')\n    os.chdir('d')\n"
    )
    mounts = [Mount(program, "/app/program"), Mount(output, "/app/output", writable=True)]
    argv = ["sh", "-c", "cd /app/output && python /app/program/main.py"]
    outcome = run_sandboxed(argv, mounts, runtime=runtime, limits=Limits(wall_seconds=30))
    assert not outcome.ok and outcome.stopped is not None
    assert "nested more than 100 deep" in outcome.stopped
    if os.geteuid() == 0:
        assert owners(output) == {os.getuid()}
