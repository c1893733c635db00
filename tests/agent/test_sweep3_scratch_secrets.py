"""A secret in a scratch file never reaches the brain, however the brain pages through it (A15)."""

from __future__ import annotations

import pytest

from benchgen.core.context import Principal
from benchgen.core.errors import Unauthenticated
from benchgen.services.accounts import tokens
from tests.agent.scratch_pages import read_in_pages
from tests.bundle_factory import require_sandbox
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
    pages, turn = read_in_pages(world, ana, api, notes, PAGE)
    read = "".join(page["text"] for page in pages)
    assert read.startswith("# deploy with ") and read.endswith(" then rerun\n")
    assert leaked not in read and leaked[-12:] not in read
    with pytest.raises(Unauthenticated):
        world.do(OPERATOR, tokens.authenticate_token, leaked)
    assert any("revoked" in notice for notice in turn.notices)
