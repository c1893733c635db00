"""`benchgen serve` and `benchgen worker` processes on a test's database, for tests of what
holds across processes (limits, faults, brokers)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from benchgen.services.runtime import Runtime

BIN = Path(sys.executable).parent / "benchgen"


def wait_until(check: Callable[[], bool], timeout_s: float, what: str) -> None:
    """Poll `check` until it holds; fail naming `what` after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def processes_running(marker: bytes) -> set[int]:
    """Pids of live processes on this machine whose command line contains `marker`."""
    found = set()
    for entry in Path("/proc").iterdir():
        try:
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if entry.name.isdigit() and marker in command:
            found.add(int(entry.name))
    return found


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Deployment:
    """The processes of one deployment on the test's database, all stopped at the end.

    They keep their temporary files (sandboxes' folders, training jobs' specs) in a folder of
    the test's own, whose path the command lines of those programs name: `started_here` finds
    what this deployment started, whatever other tests run on the machine meanwhile."""

    def __init__(self, runtime: Runtime, broker: str | None = None, **env: str) -> None:
        self.port = free_port()
        self.tmp = Path(runtime.settings.data_dir) / "tmp"
        self.tmp.mkdir(parents=True, exist_ok=True)
        self.env = {
            **os.environ,
            "TMPDIR": str(self.tmp),
            "BENCHGEN_DATA_DIR": str(runtime.settings.data_dir),
            "BENCHGEN_DATABASE_URL": runtime.settings.resolved_database_url(),
            "BENCHGEN_JOB_LEASE_S": "3",
            "BENCHGEN_JOB_SWEEP_S": "2",
            "BENCHGEN_USER_RUN_SLOTS": "2",
            "BENCHGEN_MODEL_HOST_ALLOWLIST": "127.0.0.1",
        }
        if broker:
            self.env["BENCHGEN_BROKER_URL"] = broker
        self.env.update(env)
        self.processes: list[subprocess.Popen[bytes]] = []
        self.server: subprocess.Popen[bytes] | None = None

    def start(self, *args: str) -> subprocess.Popen[bytes]:
        process = subprocess.Popen(  # noqa: S603
            [str(BIN), *args], env=self.env, stdout=subprocess.DEVNULL
        )
        self.processes.append(process)
        return process

    def serve(self) -> None:
        self.launch_server()
        self.wait_for_server()

    def launch_server(self) -> None:
        """Start `benchgen serve` without waiting for it (see `serve_together`)."""
        self.server = self.start("serve", "--port", str(self.port))

    def wait_for_server(self) -> None:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{self.url}/healthz", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.2)

    def restart_server(self) -> None:
        assert self.server is not None
        self.server.terminate()
        self.server.wait(30)
        self.serve()

    def started_here(self, marker: bytes = b"") -> set[int]:
        """Pids of live processes whose command line names this deployment's temporary folder
        (and `marker`): the sandboxes and training processes its processes started."""
        return processes_running(str(self.tmp).encode()) & processes_running(marker)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.terminate()
        for process in self.processes:
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                process.kill()


def serve_together(*deployments: Deployment) -> None:
    """Start the deployments' servers at once (as a team's servers start), then wait for each:
    several seconds sooner than one after the other, and their start-ups race on one database."""
    for deployment in deployments:
        deployment.launch_server()
    for deployment in deployments:
        deployment.wait_for_server()
