"""A scripted brain that copies a benchmark's bundle to scratch and reads one file of it a page
at a time, to its end, as a brain paging through a long file would."""

from __future__ import annotations

from typing import Any

from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo

from benchgen.core.context import Principal
from benchgen.services.benchmarks import bundles
from benchgen.services.chat.conversations import TurnView
from tests.agent.scripted import last_returns, new_conversation, say, think_with
from tests.bundle_factory import bundle
from tests.support import World

NOTES = "scoring_program/notes.py"


def read_in_pages(
    world: World, ana: str, api: Principal, notes: bytes, limit: int | None = None
) -> tuple[list[dict[str, Any]], TurnView]:
    """The pages `read_scratch_file` gave for a bundle whose scoring program holds `notes`
    (`limit` characters each, when given), and the turn that read them."""
    data = bundle(extra={NOTES: notes})
    bm = world.do(Principal.web(ana), bundles.upload_bundle, data, "b.zip").benchmark.id
    where: dict[str, Any] = {"benchmark_id": bm, "path": NOTES}
    if limit is not None:
        where["limit"] = limit
    pages: list[dict[str, Any]] = []

    def read_on(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        returned = [part.content for part in last_returns(messages)] if len(messages) > 1 else []
        pages.extend(page for page in returned if isinstance(page, dict) and "next_offset" in page)
        if len(messages) == 1:
            return ModelResponse(
                parts=[ToolCallPart("copy_bundle_to_scratch", {"benchmark_id": bm})]
            )
        at = pages[-1]["next_offset"] if pages else 0
        if at is None:
            return ModelResponse(parts=[TextPart("read")])
        return ModelResponse(parts=[ToolCallPart("read_scratch_file", {**where, "offset": at})])

    conv = new_conversation(world.rt, api)
    turn = say(world.rt, api, conv, think_with(read_on), "read the notes")
    return pages, turn
