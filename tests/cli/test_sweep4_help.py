"""Every command's help ends with examples, and each example is a command line the command
takes: only `run` and `benchmarks list` had any, and a newcomer had to guess the rest."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator

import pytest
import typer
from typer.testing import CliRunner

from benchgen.cli import COMMANDS, app

runner = CliRunner()
UNWRAPPED = {"COLUMNS": "1000"}


def _command_lines() -> Iterator[list[str]]:
    """Every command that runs (not a group): `run`, `admin create-user`…"""
    for entry in COMMANDS:
        command = entry.load()
        subcommands = getattr(command, "commands", None)
        if not subcommands:
            yield [entry.name]
        for name in subcommands or {}:
            yield [entry.name, name]


def _examples(help_text: str) -> list[str]:
    """The `$ benchgen …` lines under "Examples:", joined where a line ends in a backslash."""
    shown = help_text.split("Examples:", 1)[1].split("╭", 1)[0]
    joined = re.sub(r"\\ *\n", " ", shown)
    return [line.strip()[2:] for line in joined.splitlines() if line.strip().startswith("$ ")]


@pytest.mark.parametrize("args", list(_command_lines()), ids=" ".join)
def test_each_command_shows_examples_it_takes(args: list[str]) -> None:
    shown = runner.invoke(app, [*args, "--help"], env=UNWRAPPED)
    assert shown.exit_code == 0, shown.output
    assert "Examples:" in shown.output
    examples = [line for line in _examples(shown.output) if line.startswith("benchgen ")]
    assert examples, shown.output
    command = COMMANDS[[entry.name for entry in COMMANDS].index(args[0])].load()
    if len(args) > 1:
        command = command.commands[args[1]]  # type: ignore[attr-defined]
    for example in examples:
        words = shlex.split(example.split(" | ")[0].split(" > ")[0])
        assert words[: len(args) + 1] == ["benchgen", *args], example
        # Parsed as the command line is, without running it: an unknown option or a missing
        # value raises here, and a word too many is left over.
        parser = command.make_parser(typer.Context(command))
        _, left_over, _ = parser.parse_args(args=words[len(args) + 1 :])
        assert left_over == [], example
