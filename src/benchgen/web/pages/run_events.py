"""A run's live log as server-sent events: new log lines, progress, and the end of the run."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import anyio
from fastapi import APIRouter, Depends, Request
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from benchgen.core.context import Principal
from benchgen.core.errors import NotFound, Unauthenticated
from benchgen.core.statuses import RUN_FINAL
from benchgen.services.accounts import sessions
from benchgen.services.runs import launch, run_log
from benchgen.services.runs.launch import RunView
from benchgen.services.runtime import Runtime, transaction
from benchgen.web.session import SESSION_COOKIE, SessionDep, csrf_checked, runtime_of

router = APIRouter(dependencies=[Depends(csrf_checked)], include_in_schema=False)
POLL_SECONDS = 0.5
LOG_BATCH = 500
# Checking the cookie again on every poll may only read session rows: no grants.
_DOORMAN = Principal.system("web-sessions", frozenset())

Poll = tuple[list[run_log.LogLine], RunView]


@router.get("/runs/{run_id}/events", name="run_events")
def run_events(request: Request, live: SessionDep, run_id: str) -> StreamingResponse:
    """Follow a run: `log` (one line), `progress` (JSON done/total/percent/status), `end`."""
    runtime = runtime_of(request)
    # Refused before the stream starts, so a stranger gets the 404 page, not an empty stream.
    with transaction(runtime, live.principal, write=False) as ctx:
        launch.get_run(ctx, run_id)
    secret = request.cookies.get(SESSION_COOKIE, "")
    return StreamingResponse(
        _events(request, runtime, secret, run_id, resume_after(request)),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )


def progress_of(run: RunView) -> dict[str, Any]:
    """The numbers the progress bar shows."""
    total = run.question_count
    percent = 100 if total == 0 else min(100, run.done_count * 100 // total)
    return {"done": run.done_count, "total": total, "percent": percent, "status": run.status}


def resume_after(request: Request) -> int:
    """The last log line the browser has: its EventSource sends the last `id:` it saw when it
    reconnects (say, after this process restarted and a proxy sent it to another one), so the
    stream goes on from there instead of showing every line again."""
    seen = request.headers.get("last-event-id", "")
    return int(seen) if seen.isascii() and seen.isdigit() and len(seen) < 19 else 0


async def _events(
    request: Request, runtime: Runtime, secret: str, run_id: str, after: int = 0
) -> AsyncIterator[str]:
    shown = None
    while not await request.is_disconnected():
        polled = await run_in_threadpool(_poll, runtime, secret, run_id, after)
        if polled is None:
            return  # signed out, or the run is no longer visible
        lines, run = polled
        for line in lines:
            yield sse("log", line.line, line.id)
        after = lines[-1].id if lines else after
        if len(lines) == LOG_BATCH:
            continue  # more lines are waiting: send them before anything else
        progress = progress_of(run)
        if progress != shown:
            yield sse("progress", json.dumps(progress))
            shown = progress
        if run.status in RUN_FINAL:
            yield sse("end", run.status)
            return
        await anyio.sleep(POLL_SECONDS)


def _poll(runtime: Runtime, secret: str, run_id: str, after: int) -> Poll | None:
    """One look at the run, each in its own short read transaction: the session is checked
    again every time, so signing out (anywhere) stops the stream within one poll."""
    with transaction(runtime, _DOORMAN, write=False) as ctx:
        live = sessions.find_session(ctx, secret) if secret else None
    if live is None:
        return None
    with transaction(runtime, live.principal, write=False) as ctx:
        try:
            return run_log.read_log(ctx, run_id, after, LOG_BATCH), launch.get_run(ctx, run_id)
        except (NotFound, Unauthenticated):
            return None


def sse(event: str, data: str, event_id: int | None = None) -> str:
    """One server-sent event; each line of `data` gets its own `data:` field, as the format
    requires (a bare newline in a log line would otherwise end the event early). Log lines
    carry their id, which the browser sends back as Last-Event-ID when it reconnects."""
    fields = "".join(f"data: {part}\n" for part in data.splitlines() or [""])
    marker = "" if event_id is None else f"id: {event_id}\n"
    return f"event: {event}\n{fields}{marker}\n"
