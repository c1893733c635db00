"""`benchgen worker` without a broker stops on SIGTERM as on Ctrl-C (after its jobs), where
the signal ended it at once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent / "benchgen"


@pytest.mark.parametrize("backend", ["sqlite"])
@pytest.mark.usefixtures("cli_env")
def test_sigterm_stops_a_polling_worker_as_ctrl_c_does() -> None:
    env = {key: value for key, value in os.environ.items() if key != "BENCHGEN_BROKER_URL"}
    worker = subprocess.Popen(  # noqa: S603
        [str(BIN), "worker", "--threads", "1"],
        env={**env, "NO_COLOR": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert worker.stdout is not None
        assert "running" in worker.stdout.readline()  # the workers have started
        worker.send_signal(signal.SIGTERM)
        output, _ = worker.communicate(timeout=30)
    finally:
        worker.kill()
    assert worker.returncode == 0, output
    assert "Stopping after the current jobs" in output
