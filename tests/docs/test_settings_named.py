"""Every BENCHGEN_* variable the README and the docs name is a setting the product reads, and
every setting is named there."""

from __future__ import annotations

import re
from pathlib import Path

from benchgen.core.config import Settings

ROOT = Path(__file__).resolve().parents[2]
TEXT = "\n".join(
    p.read_text(encoding="utf-8") for p in [ROOT / "README.md", *ROOT.glob("docs/*.md")]
)
SETTINGS = {f"BENCHGEN_{name.upper()}" for name in Settings.model_fields}
# Read by the client and the CLI's `--token` (BENCHGEN_URL, BENCHGEN_TOKEN) or by the tests.
OTHERS = {"BENCHGEN_URL", "BENCHGEN_TOKEN", "BENCHGEN_TEST_PG", "BENCHGEN_TEST_BACKENDS"}
# `BENCHGEN_TOKEN_DEFAULT_DAYS` / `_MAX_DAYS`: the second ends the first's name otherwise.
SIBLINGS = re.compile(r"(BENCHGEN_[A-Z0-9_]+)((?:`? / `?_[A-Z0-9_]+)+)")
# `BENCHGEN_AGENT_ALLOW_CREATE|EDIT|PUBLISH`
CHOICES = re.compile(r"(BENCHGEN_[A-Z0-9_]+?)_([A-Z]+(?:\|[A-Z]+)+)")


def named(text: str) -> set[str]:
    """The variables `text` names, the short forms spelled out."""
    names = set(re.findall(r"BENCHGEN_[A-Z0-9_]*[A-Z0-9]", text))
    for first, rest in SIBLINGS.findall(text):
        parts = first.split("_")
        for suffix in re.findall(r"_[A-Z0-9_]+", rest):
            # The sibling replaces the first's last words: as many as make a setting's name.
            spelled = ["_".join(parts[:-cut]) + suffix for cut in range(1, len(parts) - 1)]
            names.add(next((name for name in spelled if name in SETTINGS), spelled[0]))
    for first, words in CHOICES.findall(text):
        names |= {f"{first}_{word}" for word in words.split("|")}
    return names


def test_every_variable_named_is_read() -> None:
    assert sorted(named(TEXT) - SETTINGS - OTHERS) == []


def test_every_setting_is_named() -> None:
    assert sorted(SETTINGS - named(TEXT)) == []


def test_short_forms_are_spelled_out() -> None:
    assert named("`BENCHGEN_TOKEN_DEFAULT_DAYS` / `_MAX_DAYS`") >= {"BENCHGEN_TOKEN_MAX_DAYS"}
    assert "BENCHGEN_AGENT_ALLOW_EDIT" in named("BENCHGEN_AGENT_ALLOW_CREATE|EDIT|PUBLISH")
    assert named("BENCHGEN_NO_SUCH_THING") - SETTINGS == {"BENCHGEN_NO_SUCH_THING"}
