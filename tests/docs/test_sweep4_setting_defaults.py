"""Each default a doc states for a deployment setting is the Settings class's default: a changed
default (or a reworded statement) fails here and names the sentence to update."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchgen.core.config import Settings

DOCS = Path(__file__).resolve().parents[2] / "docs"
MIB = 1024 * 1024

# (page, the statement as the page words it, the setting, the value the statement gives)
STATED = [
    ("api.md", "`BENCHGEN_MAX_BODY_BYTES` (2 MiB)", "max_body_bytes", 2 * MIB),
    ("api.md", "`BENCHGEN_MAX_IMPORT_BYTES` (32 MiB)", "max_import_bytes", 32 * MIB),
    ("api.md", "`BENCHGEN_MAX_BUNDLE_BYTES` (256 MiB)", "max_bundle_bytes", 256 * MIB),
    ("api.md", "`BENCHGEN_MAX_SUBMISSION_BYTES` (64 MiB)", "max_submission_bytes", 64 * MIB),
    ("api.md", "`BENCHGEN_MAX_DATASET_BYTES` (64 MiB)", "max_dataset_bytes", 64 * MIB),
    ("api.md", "**3 a minute and 10 a day** by default", "create_limit_per_minute", 3),
    ("api.md", "**3 a minute and 10 a day** by default", "create_limit_per_day", 10),
    ("api.md", "waits up to 60 s (the server's `BENCHGEN_AGENT_WAIT_S`)", "agent_wait_s", 60),
    ("permissions.md", "(rate limited: 10 a day, 3 a minute,", "create_limit_per_day", 10),
    ("permissions.md", "(rate limited: 10 a day, 3 a minute,", "create_limit_per_minute", 3),
    ("permissions.md", "**5 in any rolling 24 hours** by default", "stranger_runs_per_day", 5),
    ("run-settings.md", "(65,536 characters by default)", "max_reply_chars", 65536),
    ("agent.md", "(`BENCHGEN_AGENT_PART_SIZE`, default 50 questions)", "agent_part_size", 50),
    ("agent.md", "`BENCHGEN_AGENT_TURN_CAP_S` (900)", "agent_turn_cap_s", 900),
    ("agent.md", "the 10/day and 3/minute creation limits", "create_limit_per_day", 10),
    ("agent.md", "the 10/day and 3/minute creation limits", "create_limit_per_minute", 3),
    ("agent.md", "answering `running`, 60)", "agent_wait_s", 60),
    ("agent.md", "`BENCHGEN_AGENT_THREADS` (turns at once, 4;", "agent_threads", 4),
    ("agent.md", "`offline` (default)", "agent_model", "offline"),
    ("training.md", "`BENCHGEN_TRAINING_MAX_HOURS`, 24 h by default", "training_max_hours", 24),
    (
        "training.md",
        "one torch thread by default (`BENCHGEN_TRAINING_THREADS`)",
        "training_threads",
        1,
    ),
]


def _flat(page: str) -> str:
    """The page's text with every run of blanks and line ends made one space."""
    return " ".join((DOCS / page).read_text(encoding="utf-8").split())


@pytest.mark.parametrize(("page", "statement", "setting", "value"), STATED)
def test_the_stated_default_is_the_settings(
    page: str, statement: str, setting: str, value: object
) -> None:
    assert statement in _flat(page), f"{page} no longer says {statement!r}: update STATED"
    assert Settings.model_fields[setting].default == value, f"{page}: {statement!r}"
