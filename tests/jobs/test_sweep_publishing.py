"""Publishing to a Redis that accepts connections but never answers gives up, in bounded time."""

from __future__ import annotations

import socket
import threading

import pytest

from benchgen.core.config import Settings
from benchgen.jobs import broker


def test_publishing_to_a_redis_that_never_answers_gives_up(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Redis's client waited for ever: the request that queued a run hung after its commit, and
    one by one every thread of the web process."""
    monkeypatch.setattr(broker, "PUBLISH_TIMEOUT_S", 0.2)
    with socket.create_server(("127.0.0.1", 0)) as silent:  # the kernel accepts; nobody reads
        port = silent.getsockname()[1]
        dispatch = broker.CeleryDispatch(Settings(broker_url=f"redis://127.0.0.1:{port}/0"))
        failed: list[Exception] = []

        def publish() -> None:
            try:
                dispatch("job_x", "run")
            except Exception as exc:
                failed.append(exc)

        publishing = threading.Thread(target=publish, daemon=True)
        publishing.start()
        publishing.join(10)
        assert not publishing.is_alive(), "the publisher still waits on a silent broker"
        assert failed, "nothing was published, yet no error said so"
        dispatch.close()
