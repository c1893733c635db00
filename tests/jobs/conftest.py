"""Fixtures for the tests that share this machine's brokers."""

from __future__ import annotations

import fcntl
from collections.abc import Iterator

import pytest


@pytest.fixture
def machine_brokers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Held while a test uses this machine's Redis or RabbitMQ: a test that wants them in
    another pytest-xdist worker waits, since they share queues and one test restarts Redis."""
    # A lock, not xdist_group: pytest-xdist 3.8 groups by a suffix it writes into the node id,
    # which pytest 9.2 no longer reads, so grouped tests ran side by side.
    # The workers of one session have their temporary folders side by side in the same parent.
    lock = tmp_path_factory.getbasetemp().parent / "machine-brokers.lock"
    with lock.open("a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        yield
