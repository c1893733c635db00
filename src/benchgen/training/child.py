"""The training process: `python -m benchgen.training.child SPEC_PATH`, events on stdout."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchgen.training.failures import describe_exception, is_memory_error
from benchgen.training.spec import TrainSpec


def main(argv: list[str] | None = None) -> int:
    """Run the job described by the spec file; 0 when it completed or was cancelled, else 1."""
    args = sys.argv[1:] if argv is None else argv
    emit = _event_writer()
    stop = threading.Event()
    # The parent's stop request: the loop looks at the flag between steps, never mid-step.
    signal.signal(signal.SIGUSR1, lambda _signum, _frame: stop.set())
    try:
        spec = TrainSpec.from_json(Path(args[0]).read_text(encoding="utf-8"))
        from benchgen.training.loop import train  # torch loads here, under the memory limit

        train(spec, emit, stop.is_set)
    except Exception as exc:
        emit(
            {
                "event": "error",
                "message": describe_exception(exc),
                "out_of_memory": is_memory_error(exc),
            }
        )
        traceback.print_exc()  # to stderr, whose tail the parent keeps for the log
        return 1
    return 0


def _event_writer() -> Callable[[dict[str, Any]], None]:
    """Keep stdout for events only: anything a library prints goes to stderr instead."""
    events = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)

    def emit(event: dict[str, Any]) -> None:
        events.write(json.dumps(event) + "\n")
        events.flush()

    return emit


if __name__ == "__main__":
    sys.exit(main())
