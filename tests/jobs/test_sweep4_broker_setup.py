"""A broker as an operator meets it: configured where Celery is not installed (the command says
what to install, in one line), and away when jobs are queued (requests do not wait for it)."""

from __future__ import annotations

import socket
import sys

import pytest
from typer.testing import CliRunner

from benchgen.cli import app
from benchgen.core.config import Settings
from benchgen.jobs import broker


def test_a_broker_without_celery_installed_names_the_extra(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`benchgen worker` (and `benchgen serve`) ended in a ModuleNotFoundError traceback that
    named neither the setting nor the extra to install."""
    monkeypatch.setitem(sys.modules, "celery", None)  # as if it were not installed
    monkeypatch.setenv("BENCHGEN_DATA_DIR", str(settings.data_dir))
    monkeypatch.setenv("BENCHGEN_DATABASE_URL", settings.resolved_database_url())
    monkeypatch.setenv("BENCHGEN_BROKER_URL", "redis://127.0.0.1:6379/13")
    result = CliRunner().invoke(app, ["worker", "--threads", "1"])
    assert result.exit_code == 1, result.output
    said = " ".join(result.output.split())
    assert "BENCHGEN_BROKER_URL is set, but Celery is not installed here" in said
    assert "pip install 'benchgen[celery]'" in said


def test_after_a_failed_publish_the_next_ones_fail_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every request that queued a job while the broker was away waited for it again (4 s on
    RabbitMQ, 6 s on a Redis that accepts connections but does not answer), one after another
    holding the web process's threads; the sweeper sends those jobs once it is back."""
    failed = pytest.importorskip("kombu.exceptions").OperationalError
    monkeypatch.setattr(broker, "PUBLISH_TIMEOUT_S", 0.2)
    with socket.create_server(("127.0.0.1", 0)) as silent:  # the kernel accepts; nobody reads
        port = silent.getsockname()[1]
        dispatch = broker.CeleryDispatch(Settings(broker_url=f"redis://127.0.0.1:{port}/0"))
        with pytest.raises(failed):
            dispatch("job_a", "run")
        # Refused without asking the broker: the refusal names the earlier failure.
        with pytest.raises(broker.BrokerAway, match="a publish failed less than 10 s ago"):
            dispatch("job_b", "run")
        dispatch.away_until = 0.0  # ten seconds on: the broker is asked again
        with pytest.raises(failed):
            dispatch("job_c", "run")
        dispatch.close()
