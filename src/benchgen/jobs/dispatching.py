"""Which dispatch a process uses: the embedded workers' wake-up alone, or also a broker's
messages when BENCHGEN_BROKER_URL is set (the broker's code loads only then)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from benchgen.core.config import Settings
from benchgen.services import queue


@contextmanager
def dispatching(settings: Settings) -> Iterator[None]:
    """While open, every job this process queues is also published to the broker."""
    if not settings.broker_url:
        yield
        return
    from benchgen.jobs.broker import CeleryDispatch

    dispatch = CeleryDispatch(settings)
    queue.add_dispatcher(dispatch)
    try:
        yield
    finally:
        queue.remove_dispatcher(dispatch)
        dispatch.close()
