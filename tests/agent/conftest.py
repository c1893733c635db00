"""Agent test fixtures: a user with credits, and the API token she chats with."""

from __future__ import annotations

import pytest

from benchgen.core.context import Principal
from tests.support import World


@pytest.fixture
def ana(world: World) -> str:
    return world.user("ana@example.com", credits_=10_000)


@pytest.fixture
def api(world: World, ana: str) -> Principal:
    return world.api(world.token(ana, ["read", "runs", "create", "edit", "publish"]))
