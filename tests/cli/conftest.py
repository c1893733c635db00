"""The CLI's tests: commands read BENCHGEN_* variables, pointed here at the test's database."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from benchgen.cli import common
from benchgen.core.config import Settings


@pytest.fixture
def cli_env(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The test's database and data folder, cheap password hashing, and none of the caller's
    token or agent model (a developer's shell may set them)."""
    monkeypatch.setenv("BENCHGEN_DATA_DIR", str(settings.data_dir))
    monkeypatch.setenv("BENCHGEN_DATABASE_URL", settings.resolved_database_url())
    monkeypatch.setenv("BENCHGEN_ARGON2_TIME_COST", "1")
    monkeypatch.setenv("BENCHGEN_ARGON2_MEMORY_KIB", "64")
    monkeypatch.delenv("BENCHGEN_TOKEN", raising=False)
    monkeypatch.delenv("BENCHGEN_AGENT_MODEL", raising=False)
    # Rich reads COLUMNS once, when a console is made: made afresh, each test's COLUMNS holds
    # (a test that set 200 left the next one's 100 unread).
    for made in (common.console, common.errors):
        made.__dict__.pop("rich", None)
    yield
