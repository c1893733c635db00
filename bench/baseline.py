"""The `src/` of another git revision, for benches that measure it beside the current code."""

from __future__ import annotations

import compileall
import io
import subprocess
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def baseline_src(rev: str, folder: Path) -> Path:
    """The `src/` of git revision `rev`, extracted under `folder` (the checkout is untouched);
    put it first on PYTHONPATH and a child interpreter runs that code instead."""
    archive = subprocess.run(  # noqa: S603 - git with fixed arguments and a revision name
        ["git", "archive", "--format=tar", rev, "src"],  # noqa: S607 - git from PATH
        cwd=ROOT,
        capture_output=True,
        check=True,
    )
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(folder, filter="data")
    return folder / "src"


def warm_bytecode(src: Path | None) -> None:
    """Compile every BenchGen module once (the code in `src`, else the checkout's), writing their
    bytecode caches even where PYTHONDONTWRITEBYTECODE is set, as an installed package has them:
    start-up times then compare code, not compilation. Every module, not only those an import
    reaches: `benchgen` imports a command's module only when that command runs."""
    compileall.compile_dir((src or ROOT / "src") / "benchgen", quiet=1)
