"""Every `benchgen …` command line the README, the docs and the product's own messages name
exists, with the options they give it: a renamed command or option fails here, not for a reader."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

from benchgen.cli import COMMANDS

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SOURCES = sorted((ROOT / "src" / "benchgen").rglob("*.py"))
# A command line in a code span (`benchgen run --as …`), or opening a line of a code block
# (after any `VARIABLE=value`).
SPAN = re.compile(r"`(benchgen [^`]+)`")
LINE = re.compile(r"^\s*(?:[A-Z_]+=\S*\s+)*(benchgen [^#\n]*)", re.MULTILINE)


@cache
def _top() -> dict[str, Any]:
    """The top level as `benchgen` lists it: each entry's real command, loaded (once, when a
    test first needs it, not while tests are collected)."""
    return {entry.name: entry.load() for entry in COMMANDS}


def _named(path: Path) -> Iterator[tuple[str, str]]:
    """(where, command line) for each `benchgen …` a file names."""
    text = path.read_text(encoding="utf-8")
    found = SPAN.findall(text) + (LINE.findall(text) if path.suffix == ".md" else [])
    for line in dict.fromkeys(found):
        yield f"{path.relative_to(ROOT)}: {line.strip()}", line.strip()


def _words(line: str) -> list[str]:
    """The line's words, brackets of optional parts taken off."""
    try:
        words = shlex.split(line)
    except ValueError:  # a quote never closed: an example cut short in prose
        words = line.split()
    return [word.strip("[]") for word in words[1:] if word.strip("[]")]


def problems(line: str) -> list[str]:
    """What a command line names that the CLI does not have ([] when all of it exists)."""
    commands: dict[str, Any] | None = _top()
    command: Any = None
    words = _words(line)
    path = ["benchgen"]
    while commands is not None and words and not words[0].startswith(("-", "…")):
        names = words.pop(0).split("|")  # `leaderboard add|remove`: each must exist
        missing = [name for name in names if name not in commands]
        if missing:
            return [f"no command {' '.join(path)} {name}" for name in missing]
        path.append(names[0])
        command = commands[names[0]]
        commands = getattr(command, "commands", None)
    params = command.params if command is not None else []
    known = {"--help"} | {opt for param in params for opt in param.opts}
    known |= {opt for param in params for opt in param.secondary_opts}
    given = [word.split("=")[0] for word in words if re.fullmatch(r"--?[a-z][a-z-]*(=.*)?", word)]
    return [f"{' '.join(path)} has no option {option}" for option in given if option not in known]


def test_each_command_named_exists_with_its_options() -> None:
    named = [named for path in PAGES + SOURCES for named in _named(path)]
    assert len(named) > 100  # the search finds them (README alone names over 40)
    assert [f"{where}: {problem}" for where, line in named for problem in problems(line)] == []


def test_the_check_finds_a_missing_command_or_option() -> None:
    assert problems("benchgen admin settings") == []
    assert problems("benchgen leaderboard add|remove run_… --as ana@example.com") == []
    assert problems("benchgen admin setings") == ["no command benchgen admin setings"]
    assert problems("benchgen run --benchmark bm_… --modle m") == [
        "benchgen run has no option --modle"
    ]
