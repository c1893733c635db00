"""The agent's tools for custom benchmarks (A16–A17): a scratch copy of the bundle owned by the
conversation, changed there, rescored locally, and proposed as a diff the user approves."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field
from pydantic_ai import Tool

from benchgen.agent.state import TurnState, bounded, plain
from benchgen.agent.tools import Deps, Id, Offset, propose_action
from benchgen.core.context import Context
from benchgen.services.chat import scratch

Path = Annotated[str, Field(min_length=1, max_length=300)]
Content = Annotated[str, Field(max_length=scratch.MAX_FILE_BYTES)]
# A page of a file fits a tool result however its text escapes in JSON (a newline is two
# characters there): a whole large file did not, so it could never be read.
PAGE_CHARS = 20_000
TextLimit = Annotated[int, Field(ge=1, le=PAGE_CHARS)]


def copy_bundle_to_scratch(ctx: Deps, benchmark_id: Id) -> Any:
    """Copy a custom benchmark's bundle into this conversation's scratch space, to read and
    change it there. Nothing on the platform changes.

    Args:
        benchmark_id: the custom benchmark's id (bm_…).
    """
    state = ctx.deps

    def work(c: Context) -> dict[str, Any]:
        copied = scratch.open_scratch(c, state.conversation_id, benchmark_id)
        return {"scratch": plain(copied)}

    return state.call("copy_bundle_to_scratch", {"benchmark_id": benchmark_id}, work)


def read_scratch_file(
    ctx: Deps, benchmark_id: Id, path: Path, offset: Offset = 0, limit: TextLimit = PAGE_CHARS
) -> Any:
    """Read one file of the scratch copy (e.g. scoring_program/score.py), a page at a time:
    `next_offset` is where the next page starts (null at the end).

    Args:
        benchmark_id: the custom benchmark's id (bm_…).
        path: the file's path inside the bundle.
        offset: the first character to read (0: the start).
        limit: how many characters to read at most.
    """
    state = ctx.deps
    args = {"benchmark_id": benchmark_id, "path": path, "offset": offset, "limit": limit}

    def work(c: Context) -> str:
        return scratch.read_scratch_file(c, state.conversation_id, benchmark_id, path)

    read = state.call("read_scratch_file", args, work, write=False)
    if not isinstance(read, str):
        return read  # the refusal, for the brain to read
    # Screened whole, then paged: a token cut across pages (or read a few characters at a
    # time) was found in no page, and reached the brain live.
    text = state.screened_text(read)
    end = min(len(text), offset + limit)
    page = {
        "path": path,
        "text": text[offset:end],
        "offset": offset,
        "total_chars": len(text),
        "next_offset": end if end < len(text) else None,
    }
    return bounded(page)


def write_scratch_file(ctx: Deps, benchmark_id: Id, path: Path, content: Content) -> Any:
    """Create or replace one file of the scratch copy. Only the copy changes.

    Args:
        benchmark_id: the custom benchmark's id (bm_…).
        path: the file's path inside the bundle.
        content: the whole new text of the file.
    """
    state = ctx.deps
    args = {"benchmark_id": benchmark_id, "path": path, "content": content}

    def work(c: Context) -> dict[str, Any]:
        copied = scratch.write_scratch_file(c, state.conversation_id, benchmark_id, path, content)
        return {"written": path, "files": len(copied.files)}

    return state.call("write_scratch_file", args, work)


def rescore_in_scratch(ctx: Deps, benchmark_id: Id, run_id: Id) -> Any:
    """Rescore a run's saved predictions with the scratch copy's scoring program, to prove a
    scoring fix: no model is called, nothing is uploaded, no leaderboard moves.

    Args:
        benchmark_id: the custom benchmark's id (bm_…).
        run_id: a finished run on it (run_…).
    """
    state = ctx.deps
    args = {"benchmark_id": benchmark_id, "run_id": run_id}

    def work(c: Context) -> dict[str, Any]:
        return scratch.rescore_in_scratch(c, state.conversation_id, benchmark_id, run_id)

    return state.call("rescore_in_scratch", args, work, write=False)


def propose_bundle_change(ctx: Deps, benchmark_id: Id) -> Any:
    """Propose uploading the scratch copy as the benchmark's next bundle version; the user sees
    the diff and decides. Nothing is uploaded until they approve.

    Args:
        benchmark_id: the custom benchmark's id (bm_…).
    """
    # The conversation comes from the turn, never from the brain: a copy belongs to it.
    arguments = {"benchmark_id": benchmark_id, "conversation_id": ctx.deps.conversation_id}
    return propose_action(ctx.deps, "propose_bundle_change", "change_bundle", arguments)


SCRATCH_TOOLS: list[Tool[TurnState]] = [
    Tool(function, takes_ctx=True)
    for function in (
        copy_bundle_to_scratch,
        read_scratch_file,
        write_scratch_file,
        rescore_in_scratch,
        propose_bundle_change,
    )
]
