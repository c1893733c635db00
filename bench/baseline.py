"""The `src/` of another git revision, for benches that measure it beside the current code."""

from __future__ import annotations

import io
import os
import subprocess
import sys
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
    """Compile BenchGen's modules once (the code in `src`, else the checkout's), writing their
    bytecode caches even where PYTHONDONTWRITEBYTECODE is set, as an installed package has
    them: start-up times then compare code, not compilation."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    if src is not None:
        env["PYTHONPATH"] = str(src)
    subprocess.run(
        [sys.executable, "-c", "import benchgen.app, benchgen.cli, benchgen.jobs.handlers"],
        env=env,
        check=True,
    )
