"""Every command's help reads as flowing paragraphs, with values named in words."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from typer.testing import CliRunner

from benchgen.cli import COMMANDS, app
from benchgen.cli.helptext import flowing

# So wide that Rich wraps nothing: any line break left inside a paragraph is a hard one.
UNWRAPPED = {"COLUMNS": "1000"}
runner = CliRunner()


def _command_lines() -> Iterator[list[str]]:
    """Every command and group as a command line: `run`, `admin`, `admin create-user`…"""
    for entry in COMMANDS:
        command = entry.load()
        yield [entry.name]
        for name in getattr(command, "commands", {}):
            yield [entry.name, name]


def _broken_sentences(text: str) -> list[str]:
    """Pairs of lines of one paragraph or table cell where a sentence breaks mid-way: a line
    ending without punctuation, then one that goes on in lower case."""
    broken, previous, in_panel = [], "", False
    for line in text.splitlines():
        if line.startswith(("╭", "╰")):  # a panel's top or bottom edge
            in_panel, previous = line.startswith("╭"), ""
            continue
        inner = line.rstrip().strip("│")
        words = inner.strip()
        # Inside a panel a row goes on in its description column, its first columns blank.
        goes_on = bool(previous and words) and (not in_panel or inner.startswith("   "))
        if goes_on and previous[-1] not in ".:;!?)]" and words[0].islower():
            broken.append(f"{previous!r} / {words!r}")
        previous = words
    return broken


@pytest.mark.parametrize("args", list(_command_lines()), ids=" ".join)
def test_help_reads_as_paragraphs_with_plain_metavars(args: list[str]) -> None:
    shown = runner.invoke(app, [*args, "--help"], env=UNWRAPPED)
    assert shown.exit_code == 0, shown.output
    assert _broken_sentences(shown.output) == []
    assert re.findall(r"<(?:bool|str|int|float|file|path)[^>]*>", shown.output) == []
    usage = next(line for line in shown.output.splitlines() if "Usage:" in line)
    assert "{" not in usage  # Typer's braces around required arguments read as literal ones


def test_the_check_finds_a_sentence_broken_mid_line() -> None:
    assert _broken_sentences(" Offer a model to everyone: runs use it, and training\n jobs may.")
    assert not _broken_sentences(" One paragraph.\n\n another, in lower case.")


def test_paragraphs_flow_and_blank_lines_still_part_them() -> None:
    assert flowing("One sentence\n    goes on.\n\n    Another paragraph.") == (
        "One sentence goes on.\n\nAnother paragraph."
    )


def test_run_says_what_it_needs() -> None:
    shown = runner.invoke(app, ["run", "--help"], env=UNWRAPPED).output
    assert "--benchmark and --model for a new run, or --retry" in shown
    assert shown.count("required unless --retry") == 2
