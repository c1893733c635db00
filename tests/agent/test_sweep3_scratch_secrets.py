"""A secret in a scratch file never reaches the brain, however the brain pages through it (A15)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo

from benchgen.core.context import Principal
from benchgen.core.errors import Unauthenticated
from benchgen.services.accounts import tokens
from benchgen.services.benchmarks import bundles
from tests.agent.scripted import last_returns, new_conversation, say, think_with
from tests.bundle_factory import bundle, require_sandbox
from tests.support import OPERATOR, World

PAGE = 7  # a few characters at a time: no page holds the whole token


@pytest.fixture(autouse=True)
def _sandbox() -> None:
    require_sandbox()


def test_a_token_in_a_scratch_file_read_in_small_pages_is_never_shown_and_is_revoked(
    world: World, ana: str, api: Principal
) -> None:
    """Each page was scanned alone, so a token cut across pages was found in none: the brain
    read it whole, a few characters at a time, and it stayed live."""
    leaked = world.token(ana, ["read"])
    notes = f"# deploy with {leaked} then rerun\n".encode()
    web = Principal.web(ana)
    data = bundle(extra={"scoring_program/notes.py": notes})
    bm = world.do(web, bundles.upload_bundle, data, "b.zip").benchmark.id
    where = {"benchmark_id": bm, "path": "scoring_program/notes.py", "limit": PAGE}
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
    read = "".join(page["text"] for page in pages)
    assert read.startswith("# deploy with ") and read.endswith(" then rerun\n")
    assert leaked not in read and leaked[-12:] not in read
    with pytest.raises(Unauthenticated):
        world.do(OPERATOR, tokens.authenticate_token, leaked)
    assert any("revoked" in notice for notice in turn.notices)
