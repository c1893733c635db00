"""`benchgen run` and `benchgen worker` interrupted twice, and a `--url` without http://."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, NoReturn

import pytest
from typer.testing import CliRunner

from benchgen.cli import app
from benchgen.cli import evaluation as cli_evaluation
from benchgen.cli import runs as cli_runs
from benchgen.cli.common import Terminated
from benchgen.core.context import Principal
from benchgen.services.runs import launch
from tests.support import QA, World

runner = CliRunner()
HERE = ["--as", "ana@example.com"]
pytestmark = pytest.mark.usefixtures("cli_env")


@pytest.mark.parametrize(("again", "status"), [(KeyboardInterrupt, 130), (Terminated, 143)])
def test_a_second_interrupt_while_cancelling_exits_as_an_interrupt(
    world: World, monkeypatch: pytest.MonkeyPatch, again: type[KeyboardInterrupt], status: int
) -> None:
    ana = world.user("ana@example.com")
    bm = world.benchmark(ana, QA)
    monkeypatch.setattr(cli_runs, "start_workers", lambda *_: [])

    def ctrl_c(_: float) -> NoReturn:
        raise KeyboardInterrupt  # the first, while the command follows the run

    waits: list[float] = []

    def interrupted_wait(_: Any, timeout_s: float = 10) -> None:
        """The wait for the worker to finish its answer, which the second one cuts short."""
        waits.append(timeout_s)
        if len(waits) == 1:
            raise again

    monkeypatch.setattr(cli_runs, "time", SimpleNamespace(sleep=ctrl_c))
    monkeypatch.setattr(cli_runs, "stop_workers", interrupted_wait)
    result = runner.invoke(app, ["run", "--benchmark", bm, "--model", "mdl_builtin_echo", *HERE])
    # Click's "Aborted!" and exit status 1, as if the run had failed.
    assert result.exit_code == status, result.output
    assert "Aborted" not in result.output
    [run] = world.do(Principal.web(ana), launch.list_runs)
    assert f"run {run.id} may still be finishing its cancel" in result.output
    # Left at once: the job is handed back without waiting for the worker.
    assert waits == [10, 0]


def test_a_second_interrupt_while_a_worker_stops_exits_as_an_interrupt(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("BENCHGEN_BROKER_URL", raising=False)
    monkeypatch.setattr(cli_evaluation, "start_workers", lambda *_: [])

    def ctrl_c(_: float) -> NoReturn:
        raise KeyboardInterrupt  # the first: stop after the current jobs

    def terminated(*_: object, **__: object) -> NoReturn:
        raise Terminated  # the second, while waiting for those jobs

    monkeypatch.setattr(cli_evaluation, "time", SimpleNamespace(sleep=ctrl_c))
    monkeypatch.setattr(cli_evaluation, "stop_workers", terminated)
    result = runner.invoke(app, ["worker", "--threads", "1"])
    # It exited 130 saying nothing (Click's "Aborted!" and 1 with older Typer).
    assert result.exit_code == 143, result.output
    assert "the jobs still in hand went back to the queue" in result.output


def test_a_url_without_http_is_a_usage_error() -> None:
    there = ["--url", "127.0.0.1:8000", "--token", "bgp_x"]
    result = runner.invoke(app, ["benchmarks", "list", *there])
    # Accepted, it failed as unreachable: "cannot send to 127.0.0.1:8000", exit 1.
    assert result.exit_code == 2, result.output
    assert "with http:// or https:// at its start" in result.output
