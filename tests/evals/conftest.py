"""Fixtures for the pure evaluation tests: async tests run on asyncio through anyio."""

from __future__ import annotations

import pytest


@pytest.fixture
def anyio_backend() -> str:
    """Run `pytest.mark.anyio` tests on asyncio only (the engine is written for it)."""
    return "asyncio"
