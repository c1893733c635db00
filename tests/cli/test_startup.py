"""`benchgen` starts without what only some commands need: the web server, the agent, Alembic."""

from __future__ import annotations

import subprocess
import sys

# Each of these costs a tenth of a second or more at every start; `benchgen run` needs none.
DEFERRED = ("alembic", "fastapi", "httpx", "pydantic_ai", "starlette", "uvicorn")


def test_importing_the_command_leaves_heavy_modules_for_later() -> None:
    probe = f"import sys, benchgen.cli; print(*(m for m in {DEFERRED!r} if m in sys.modules))"
    done = subprocess.run(  # noqa: S603 - this interpreter, a fixed program
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.split() == []
